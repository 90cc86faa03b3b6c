//! The two themes, dark and light: every style the UI draws with.

use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThemeName {
    #[default]
    Dark,
    Light,
}

impl std::str::FromStr for ThemeName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "dark" => Ok(ThemeName::Dark),
            "light" => Ok(ThemeName::Light),
            other => Err(format!(
                "unknown theme `{other}`: the themes are dark and light"
            )),
        }
    }
}

/// The styles of one theme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theme {
    pub text: Style,
    pub dim: Style,
    pub user: Style,
    pub accent: Style,
    pub heading: Style,
    pub code: Style,
    pub keyword: Style,
    pub string: Style,
    pub comment: Style,
    pub number: Style,
    pub ok: Style,
    pub warn: Style,
    pub error: Style,
    pub added: Style,
    pub removed: Style,
    pub status: Style,
    pub selected: Style,
}

impl Theme {
    pub fn of(name: ThemeName) -> Theme {
        match name {
            ThemeName::Dark => Theme::dark(),
            ThemeName::Light => Theme::light(),
        }
    }

    pub fn dark() -> Theme {
        let s = Style::default();
        Theme {
            text: s,
            dim: s.fg(Color::DarkGray),
            user: s.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            accent: s.fg(Color::Magenta),
            heading: s.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            code: s.fg(Color::Gray),
            keyword: s.fg(Color::LightMagenta),
            string: s.fg(Color::LightGreen),
            comment: s.fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
            number: s.fg(Color::LightYellow),
            ok: s.fg(Color::Green),
            warn: s.fg(Color::Yellow),
            error: s.fg(Color::Red),
            added: s.fg(Color::Green),
            removed: s.fg(Color::Red),
            status: s.fg(Color::Gray).bg(Color::Black),
            selected: s.add_modifier(Modifier::REVERSED),
        }
    }

    pub fn light() -> Theme {
        let s = Style::default();
        Theme {
            text: s.fg(Color::Black),
            dim: s.fg(Color::Gray),
            user: s.fg(Color::Blue).add_modifier(Modifier::BOLD),
            accent: s.fg(Color::Magenta),
            heading: s.fg(Color::Blue).add_modifier(Modifier::BOLD),
            code: s.fg(Color::Black),
            keyword: s.fg(Color::Magenta),
            string: s.fg(Color::Green),
            comment: s.fg(Color::Gray).add_modifier(Modifier::ITALIC),
            number: s.fg(Color::Red),
            ok: s.fg(Color::Green),
            warn: s.fg(Color::Rgb(160, 100, 0)),
            error: s.fg(Color::Red),
            added: s.fg(Color::Green),
            removed: s.fg(Color::Red),
            status: s.fg(Color::Black).bg(Color::White),
            selected: s.add_modifier(Modifier::REVERSED),
        }
    }
}
