//! The kernel argument in the form cudarc can push to a launch.

use cudarc::driver::DeviceRepr;
use ikp_device::KernelArg;

/// The ikp kernel argument as passed to a launch: the device's `ikp::Arg`.
///
/// `#[repr(transparent)]` over [`KernelArg`], itself `#[repr(C)]` (40 bytes, 8-aligned),
/// so it has exactly the layout of `ikp::Arg` in `ikp.cuh`. Push it by reference:
/// `launch_builder(&f).arg(&session.kernel_arg())`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IkpArg(pub KernelArg);

// SAFETY: `IkpArg` is a transparent wrapper of a `#[repr(C)]` plain-old-data struct of
// integers (no pointers the host dereferences, no padding), laid out as the device's
// `ikp::Arg`; the driver copies its 32 bytes into the kernel's parameter space.
unsafe impl DeviceRepr for IkpArg {}

impl From<KernelArg> for IkpArg {
    fn from(a: KernelArg) -> IkpArg {
        IkpArg(a)
    }
}

impl std::ops::Deref for IkpArg {
    type Target = KernelArg;
    fn deref(&self) -> &KernelArg {
        &self.0
    }
}

const _: () = assert!(std::mem::size_of::<IkpArg>() == 40);
const _: () = assert!(std::mem::align_of::<IkpArg>() == 8);
