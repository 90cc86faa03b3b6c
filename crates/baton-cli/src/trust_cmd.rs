//! `baton trust [--cwd DIR] [--json]`: trusts a project's own settings (see `baton_app::trust`).

use std::path::PathBuf;

use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::trust::{trust, widening_now};

// `baton trust [--cwd DIR]`: trusts the project's config and role files as they are now.
#[derive(clap::Args, Debug)]
pub struct TrustArgs {
    /// A folder of the project to trust (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print what was trusted as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(args: TrustArgs) -> Result<Exit> {
    let cwd = baton_app::project::working_dir(args.cwd)?;
    let root = baton_state::project_root(&cwd);
    let hash = trust(&root)?;
    let (keys, roles) = widening_now(&root);
    if args.json {
        crate::documents::print(&crate::documents::TrustDocument {
            project: root.display().to_string(),
            hash: hash.clone(),
            settings: keys.clone(),
            roles: roles.clone(),
        });
    } else {
        outln!("baton: trusted {} ({hash})", root.display());
        if keys.is_empty() && roles.is_empty() {
            outln!("  nothing in it widens what runs now; a widening setting or role added later asks again");
        } else {
            if !keys.is_empty() {
                outln!("  settings that now apply: {}", keys.join(", "));
            }
            if !roles.is_empty() {
                outln!("  roles that now apply: {}", roles.join(", "));
            }
            outln!("  a change to these settings or roles (or a new one) makes it untrusted again until you run `baton trust` again");
        }
    }
    Ok(Exit::Ok)
}
