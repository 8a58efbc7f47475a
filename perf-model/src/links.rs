//! Scale-up links: the bandwidth a collective among the GPUs of one machine can reach,
//! per device of [`crate::DeviceSpec::builtin`], with each figure's public source in
//! `docs/HARDWARE.md` ("Scale-up links").
//!
//! The figure is a collective's **nominal bus bandwidth**: what one device can send in
//! one direction at once, the ceiling of NCCL's (and RCCL's) `busbw`. Vendors print the
//! bidirectional total of all of a device's links (NVLink 4 on an H100 SXM: 900 GB/s), so
//! the nominal figure is half of it. GB/s are 10⁹ bytes a second, as NCCL prints them.
//! A PCIe card's figure is its PCIe slot's (an NVLink bridge joins only two cards, and a
//! trace does not say whether one is fitted). Between machines the network decides, and
//! a trace names no network card: no figure (the caller can name one).

/// One device's link to the other devices of its machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleUpLink {
    /// Its name (`NVLink 4`, `Infinity Fabric`, `PCIe 5.0 x16`).
    pub name: &'static str,
    /// Nominal bus bandwidth: one direction of all the device's links, GB/s (10⁹ B/s).
    pub bus_gbps: f64,
}

/// The scale-up link of the device named `device` (a [`crate::DeviceSpec`]'s `name`:
/// `H100 SXM`, `MI300X`, …), or `None` for a device without one in the table (a
/// NeuronCore's links depend on the machine: the emulator states them in its traces).
pub fn scale_up_link(device: &str) -> Option<ScaleUpLink> {
    let link = |name, bidirectional_gbps: f64| ScaleUpLink {
        name,
        bus_gbps: bidirectional_gbps / 2.0,
    };
    Some(match device {
        // NVIDIA datasheets: NVLink 900 GB/s (H100 SXM, H200), 1.8 TB/s (B200), 600 GB/s
        // (A100 SXM); PCIe Gen5 128 GB/s (H100 PCIe), Gen4 64 GB/s (A100 PCIe).
        "H100 SXM" | "H200" => link("NVLink 4", 900.0),
        "B200" => link("NVLink 5", 1_800.0),
        "A100 SXM 80GB" | "A100 SXM 40GB" => link("NVLink 3", 600.0),
        "H100 PCIe" => link("PCIe 5.0 x16", 128.0),
        "A100 PCIe 80GB" | "A100 PCIe 40GB" => link("PCIe 4.0 x16", 64.0),
        // AMD data sheets: 7 Infinity Fabric links of 128 GB/s (MI300X, MI325X) or
        // 153.6 GB/s (MI355X), bidirectional, per GPU.
        "MI300X" | "MI325X" => link("Infinity Fabric", 7.0 * 128.0),
        "MI355X" => link("Infinity Fabric", 7.0 * 153.6),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::BUILTIN;
    use crate::DeviceSpec;

    #[test]
    fn every_gpu_of_the_device_table_has_a_link_and_no_neuroncore_does() {
        for key in BUILTIN {
            let spec = DeviceSpec::builtin(key).unwrap();
            let link = scale_up_link(&spec.name);
            assert_eq!(link.is_none(), key.starts_with("trn"), "{key}: {link:?}");
        }
        assert_eq!(scale_up_link("H100 SXM").unwrap().bus_gbps, 450.0);
        assert_eq!(scale_up_link("MI300X").unwrap().bus_gbps, 448.0);
    }
}
