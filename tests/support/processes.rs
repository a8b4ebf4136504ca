//! Process checks shared by the suites that kill servers and commands.

/// Whether no process of the group `pgid` still runs (zombies do not count: where PID 1 does not
/// reap, an orphan that died stays a zombie).
pub fn group_gone(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return true };
    !entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { return false };
        let Some((_, rest)) = stat.rsplit_once(')') else { return false };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("Z");
        fields.nth(1).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) && state != "Z" && state != "X"
    })
}
