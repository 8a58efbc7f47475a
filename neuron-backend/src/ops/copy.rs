//! Copies between the host and devices.

use runtime_hooks::{
    clock, DmaDirection, OperatorPayload, OperatorScope, RuntimeCallKind, RuntimeCallPayload,
    RuntimeCallScope,
};

use crate::dispatch::{self, Lowering, OpCall};
use crate::tensor::{Data, Storage};
use crate::timing::KernelInfo;
use crate::{BackendError, Device, Tensor};

impl Tensor {
    /// A copy on `device` (host→device or device→device); the same tensor if already
    /// there. Recorded as `aten::_to_copy` with a `Memcpy` kernel on the current stream.
    pub fn to_device(&self, device: &Device) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::_to_copy";
        self.check_live(OP)?;
        let (kernel, direction) = match self.device() {
            Some(current) if current.same(device) => return Ok(self.clone()),
            Some(_) => ("Memcpy PtoP (Neuron -> Neuron)", DmaDirection::PeerToPeer),
            None => ("Memcpy HtoD (Host -> Neuron)", DmaDirection::HostToDevice),
        };
        let call = OpCall {
            op: OP,
            kernel,
            inputs: &[self],
            outputs: vec![(self.shape.to_vec(), self.dtype)],
            flops: 0,
            lowering: Lowering::Copy {
                bytes: self.size_bytes(),
                direction,
            },
        };
        let out = dispatch::dispatch(device, call, |values| vec![values[0].clone()])?;
        Ok(out.into_iter().next().expect("one output"))
    }

    /// A host copy; waits (moves the host clock) until the device has produced the
    /// tensor and the copy is done. The same tensor if already on the host.
    pub fn to_host(&self) -> Result<Tensor, BackendError> {
        const OP: &str = "aten::_to_copy";
        self.check_live(OP)?;
        let Some(device) = self.device() else {
            return Ok(self.clone());
        };
        let host = dispatch::HostSide::enter();
        let bytes = self.size_bytes();
        let corr_id = runtime_hooks::next_corr_id();
        let _op = OperatorScope::new(OperatorPayload {
            name_id: runtime_hooks::name!("aten::_to_copy"),
            input_sig_id: dispatch::op_ids(OP, &[self]).input_sig_id,
            corr_id,
            bytes,
            ..Default::default()
        });
        host.framework();
        let kernel = KernelInfo {
            name_id: runtime_hooks::name!("Memcpy DtoH (Neuron -> Host)"),
            corr_id,
            flops: 0,
            bytes,
        };
        let lowering = Lowering::Copy {
            bytes,
            direction: DmaDirection::DeviceToHost,
        };
        let queue = device.current_queue();
        if device.timeline().queues[queue].released {
            return Err(BackendError::StreamReleased {
                op: OP,
                stream: device.current_stream().to_string(),
            });
        }
        let (_, end_ns) = dispatch::launch(device, queue, kernel, Some(OP), &lowering, || {
            Ok::<(), BackendError>(())
        })?;
        {
            let _wait = RuntimeCallScope::new(
                RuntimeCallKind::MemoryCopy,
                RuntimeCallPayload {
                    name_id: runtime_hooks::name!("nrt_tensor_read"),
                    device: device.shared.index,
                    queue: queue as u16,
                    corr_id,
                    bytes,
                    ..Default::default()
                },
            );
            crate::device::wait_until(end_ns);
        }
        let _emulating = clock::emulation_scope();
        let data = {
            let data = self.storage.data.read().unwrap_or_else(|p| p.into_inner());
            match data.values(self.offset, self.numel()) {
                Some(values) => Data::from_values(self.dtype, values),
                None => Data::Absent,
            }
        };
        Ok(Tensor {
            shape: self.shape.clone(),
            dtype: self.dtype,
            storage: Storage::host(data),
            offset: 0,
        })
    }
}
