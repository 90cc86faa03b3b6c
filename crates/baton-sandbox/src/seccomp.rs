//! The seccomp filter of a confined command: no device nodes, no mounts, no host-wide settings,
//! no kernel modules, no system calls of a foreign ABI, no Unix-domain sockets unless
//! `sandbox.unix_sockets` lists some; and, when the network is off, no
//! `AF_INET`, `AF_INET6` or `AF_PACKET` sockets and no io_uring instances.
//!
//! Capabilities are dropped as well (`linux.rs`), which already refuses most of these; the filter
//! keeps them refused if a capability were ever left.

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_JGE_K: u16 = 0x35;
const BPF_AND_K: u16 = 0x54;
const BPF_RET_K: u16 = 0x06;
const BPF_JA: u16 = 0x05;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
/// Offsets in `struct seccomp_data`.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
/// The low 32 bits of argument `n` (little-endian targets).
const fn off_arg(n: u32) -> u32 {
    16 + 8 * n
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
/// System call numbers at or above this are another ABI's (x32 on x86_64).
const FOREIGN_NR: u32 = 0x4000_0000;

const S_IFMT: u32 = 0o170_000;
const S_IFCHR: u32 = 0o020_000;
const S_IFBLK: u32 = 0o060_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Allow,
    DenyPerm,
    DenyAccess,
    Mknod,
    Mknodat,
    Socket,
}

enum Op {
    Load(u32),
    And(u32),
    /// Jump to the label when the accumulator equals `k`, else go on.
    JumpIfEq(u32, Label),
    JumpIfNe(u32, Label),
    JumpIfAtLeast(u32, Label),
    Goto(Label),
    Ret(u32),
    Mark(Label),
}

/// System calls refused outright with `EPERM`: they change the file system's shape, the host's
/// identity or the kernel.
fn refused() -> Vec<i64> {
    let mut v = vec![
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fsconfig,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_adjtimex,
        libc::SYS_clock_adjtime,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([libc::SYS_kexec_file_load, libc::SYS_iopl, libc::SYS_ioperm]);
    v
}

fn num(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn family(f: i32) -> u32 {
    u32::try_from(f).unwrap_or(u32::MAX)
}

fn program(network: bool, unix_sockets: bool) -> Vec<Op> {
    let mut ops = vec![
        Op::Load(OFF_ARCH),
        Op::JumpIfNe(AUDIT_ARCH, Label::DenyPerm),
    ];
    ops.push(Op::Load(OFF_NR));
    ops.push(Op::JumpIfAtLeast(FOREIGN_NR, Label::DenyPerm));
    for nr in refused() {
        ops.push(Op::JumpIfEq(num(nr), Label::DenyPerm));
    }
    #[cfg(target_arch = "x86_64")]
    ops.push(Op::JumpIfEq(num(libc::SYS_mknod), Label::Mknod));
    ops.push(Op::JumpIfEq(num(libc::SYS_mknodat), Label::Mknodat));
    if !network {
        ops.push(Op::JumpIfEq(
            num(libc::SYS_io_uring_setup),
            Label::DenyAccess,
        ));
    }
    if !network || !unix_sockets {
        ops.push(Op::JumpIfEq(num(libc::SYS_socket), Label::Socket));
    }
    ops.push(Op::Goto(Label::Allow));
    // mknod(path, mode, dev) / mknodat(dirfd, path, mode, dev): no character or block devices.
    for (label, arg) in [(Label::Mknod, 1), (Label::Mknodat, 2)] {
        ops.push(Op::Mark(label));
        ops.push(Op::Load(off_arg(arg)));
        ops.push(Op::And(S_IFMT));
        ops.push(Op::JumpIfEq(S_IFCHR, Label::DenyPerm));
        ops.push(Op::JumpIfEq(S_IFBLK, Label::DenyPerm));
        ops.push(Op::Goto(Label::Allow));
    }
    if !network || !unix_sockets {
        ops.push(Op::Mark(Label::Socket));
        ops.push(Op::Load(off_arg(0)));
        // Pathname Unix sockets are not in Landlock's reach: a host service listening on one
        // (tmux, screen, D-Bus, an ssh-agent, Docker) would run what a command asks, outside
        // the sandbox. `socketpair` is another call and stays allowed.
        let mut families = Vec::new();
        if !network {
            families.extend([libc::AF_INET, libc::AF_INET6, libc::AF_PACKET]);
        }
        if !unix_sockets {
            families.push(libc::AF_UNIX);
        }
        for f in families {
            ops.push(Op::JumpIfEq(family(f), Label::DenyAccess));
        }
        ops.push(Op::Goto(Label::Allow));
    }
    ops.push(Op::Mark(Label::Allow));
    ops.push(Op::Ret(RET_ALLOW));
    ops.push(Op::Mark(Label::DenyPerm));
    ops.push(Op::Ret(RET_ERRNO | family(libc::EPERM)));
    ops.push(Op::Mark(Label::DenyAccess));
    ops.push(Op::Ret(RET_ERRNO | family(libc::EACCES)));
    ops
}

/// The filter as BPF instructions, its jumps resolved.
pub(super) fn filter(network: bool, unix_sockets: bool) -> Vec<libc::sock_filter> {
    let ops = program(network, unix_sockets);
    // Where each label lands, counting real instructions only.
    let mut at = Vec::new();
    let mut n = 0usize;
    for op in &ops {
        match op {
            Op::Mark(l) => at.push((*l, n)),
            _ => n += 1,
        }
    }
    let target = |l: Label| at.iter().find(|(x, _)| *x == l).map_or(0, |(_, i)| *i);
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let mut out = Vec::with_capacity(n);
    for op in &ops {
        let here = out.len();
        // Jumps are relative to the next instruction and always forward here.
        let rel = |l: Label| u8::try_from(target(l) - here - 1).unwrap_or(0);
        let jump = |code: u16, k: u32, jt: u8, jf: u8| libc::sock_filter { code, jt, jf, k };
        out.push(match *op {
            Op::Mark(_) => continue,
            Op::Load(off) => stmt(BPF_LD_W_ABS, off),
            Op::And(k) => stmt(BPF_AND_K, k),
            Op::JumpIfEq(k, l) => jump(BPF_JEQ_K, k, rel(l), 0),
            Op::JumpIfNe(k, l) => jump(BPF_JEQ_K, k, 0, rel(l)),
            Op::JumpIfAtLeast(k, l) => jump(BPF_JGE_K, k, rel(l), 0),
            Op::Goto(l) => stmt(BPF_JA, u32::from(rel(l))),
            Op::Ret(k) => stmt(BPF_RET_K, k),
        });
    }
    out
}

/// Installs `filter` on the calling thread (no_new_privs first, as seccomp requires).
pub(super) fn apply(filter: &[libc::sock_filter]) -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: u16::try_from(filter.len()).unwrap_or(0),
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: prctl with PR_SET_NO_NEW_PRIVS takes integers; PR_SET_SECCOMP reads the
    // program through the pointer, which stays valid for the call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
