//! The accelerator's choice under `--vm-accel auto`: KVM probed with a
//! short boot deadline, and why it was not used, in plain words.

use std::time::Duration;

use crate::launch::Ended;

/// How long `--vm-accel auto` gives a KVM guest to reach runq before it
/// boots the guest under TCG instead (a KVM boot takes a few seconds).
pub(crate) const KVM_PROBE_BOOT: Duration = Duration::from_secs(30);

/// Why KVM was not used, in plain words, after `/dev/kvm` opened but the
/// guest did not run on it; `tail` is the console's last line.
pub(crate) fn kvm_failure(ended: &Ended, tail: &str) -> String {
    let what = match ended {
        Ended::BootTimeout => "the guest did not reach runq within 30 s under KVM",
        Ended::RunTimeout => "the guest stopped making progress under KVM",
        _ => "the VM stopped before the guest started under KVM",
    };
    let tail: String = tail.chars().filter(|c| !c.is_control()).collect();
    let tail = tail.trim();
    if tail.is_empty() {
        format!("{what} (its console is empty); running under TCG (software emulation) instead")
    } else {
        format!(
            "{what} (its console's last line: {tail}); running under TCG (software emulation) instead"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn why_kvm_was_not_used_is_plain_words_without_nuls() {
        let why = kvm_failure(&Ended::BootTimeout, "Decompressing Linux...\0\0\0");
        assert_eq!(
            why,
            "the guest did not reach runq within 30 s under KVM (its console's last \
             line: Decompressing Linux...); running under TCG (software emulation) instead"
        );
        assert!(kvm_failure(&Ended::DiedAtBoot, "\0\0").contains("its console is empty"));
    }
}
