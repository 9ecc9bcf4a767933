"""Running code objects on an AMD GPU through hip-python.

Module loading, kernel lookup, allocation, copies and launches go through the
HIP module API (``hipModuleLoadData``, ``hipModuleGetFunction``,
``hipModuleLaunchKernel`` with the kernarg buffer passed through ``extra``),
every return code checked. Where ROCm or a GPU is missing, constructing the
device raises one :class:`DeviceError` that says what is missing and how to
get it; nothing here silently falls back to the emulator.
"""
from __future__ import annotations

import ctypes

import numpy as np

from asmevo.runtime.device import BufferImage, DeviceError, RunResult
from asmevo.runtime.gpu import Alloc as _Alloc
from asmevo.runtime.gpu import check_status as _check
from asmevo.runtime.gpu import GpuDevice, Runtime, interleaved_times, start
from asmevo.targets.amdgpu.kernargs import pack
from asmevo.targets.amdgpu.codeobject import load
from asmevo.launch.spec import LaunchSpec

# hip_runtime_api.h: markers of the ``extra`` launch array
HIP_LAUNCH_PARAM_BUFFER_POINTER = 0x01
HIP_LAUNCH_PARAM_BUFFER_SIZE = 0x02
HIP_LAUNCH_PARAM_END = 0x03
L2_FLUSH_BYTES = 512 * 1024 * 1024   # larger than MI300X's 256 MB Infinity Cache


def kernarg_bytes(kernel, spec: LaunchSpec, values: dict, pointers: dict[str, int]) -> bytes:
    """The buffer passed through ``extra``: the same bytes every device packs."""
    return pack(kernel, spec, values, pointers)


def _import_hip():
    try:
        from hip import hip  # type: ignore
    except ImportError as exc:
        raise DeviceError("the hip device needs hip-python: pip install hip-python "
                          "(matching your ROCm version)") from exc
    return hip


# hip-python raises RuntimeError from hipInit when libamdhip64.so is absent
HIP = Runtime(load=_import_hip, init="hipInit", count="hipGetDeviceCount",
              needs="the hip device needs the ROCm runtime (libamdhip64.so)",
              remedy="install ROCm, or use --device emulator",
              none_visible="ROCm is installed but no AMD GPU is visible (hipGetDeviceCount=0)")


class HipDevice(GpuDevice):
    """One AMD GPU; ``device_index`` selects which."""

    targets = ("amdgpu",)

    def __init__(self, device_index: int = 0):
        hip = start(HIP, device_index)
        _check(hip.hipSetDevice(device_index), "hipSetDevice")
        props = hip.hipDeviceProp_t()
        _check(hip.hipGetDeviceProperties(props, device_index), "hipGetDeviceProperties")
        arch = props.gcnArchName
        self.arch = arch.decode() if isinstance(arch, bytes) else str(arch)
        self.name = f"hip:{device_index}:{self.arch.split(':')[0]}"
        self._hip = hip
        self._modules: dict[bytes, object] = {}

    # -- helpers ---------------------------------------------------------
    def _function(self, code: bytes, kernel: str):
        hip = self._hip
        module = self._modules.get(code)
        if module is None:
            module = _check(hip.hipModuleLoadData(code), "hipModuleLoadData")
            self._modules[code] = module
        return _check(hip.hipModuleGetFunction(module, kernel.encode()),
                      f"hipModuleGetFunction({kernel})")

    def _alloc(self, nbytes: int) -> _Alloc:
        return _Alloc(_check(self._hip.hipMalloc(max(nbytes, 4)), "hipMalloc"), nbytes)

    def _free(self, a: _Alloc) -> None:
        _check(self._hip.hipFree(a.ptr), "hipFree")

    def _launch(self, fn, spec: LaunchSpec, kernargs: bytes) -> None:
        hip = self._hip
        buf = ctypes.create_string_buffer(kernargs, len(kernargs))
        size = ctypes.c_size_t(len(kernargs))
        extra = (ctypes.c_void_p * 5)(HIP_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(buf),
                                      HIP_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size),
                                      HIP_LAUNCH_PARAM_END)
        _check(hip.hipModuleLaunchKernel(fn, *spec.grid, *spec.block, spec.dynamic_lds, None,
                                         None, ctypes.addressof(extra)),
               "hipModuleLaunchKernel")

    def _upload(self, spec: LaunchSpec, buffers: dict[str, np.ndarray], guard: int,
                pattern: int) -> tuple[dict[str, _Alloc], dict[str, int]]:
        hip = self._hip
        allocs, pointers = {}, {}
        for a in spec.buffers:
            host = np.ascontiguousarray(buffers[a.name])
            blob = bytes([pattern]) * guard + host.tobytes() + bytes([pattern]) * guard
            al = self._alloc(len(blob))
            _check(hip.hipMemcpy(al.ptr, blob, len(blob), hip.hipMemcpyKind.hipMemcpyHostToDevice),
                   "hipMemcpy H2D")
            allocs[a.name] = al
            pointers[a.name] = int(al.ptr) + guard
        return allocs, pointers

    # -- Device protocol -------------------------------------------------
    def run(self, code: bytes, spec: LaunchSpec, buffers: dict[str, np.ndarray], *,
            guard_bytes: int = 256, guard_pattern: int = 0xA5, variant: int = 0,
            approx_variant: int = 0) -> RunResult:
        hip = self._hip
        kernel = load(code).kernel(spec.kernel)
        fn = self._function(code, spec.kernel)
        allocs, pointers = self._upload(spec, buffers, guard_bytes, guard_pattern)
        try:
            self._launch(fn, spec, kernarg_bytes(kernel, spec, buffers, pointers))
            _check(hip.hipDeviceSynchronize(), "kernel execution")
            out = {}
            for a in spec.buffers:
                al = allocs[a.name]
                host = bytearray(al.nbytes)
                _check(hip.hipMemcpy(host, al.ptr, al.nbytes,
                                     hip.hipMemcpyKind.hipMemcpyDeviceToHost), "hipMemcpy D2H")
                data = np.frombuffer(bytes(host[guard_bytes:al.nbytes - guard_bytes]),
                                     dtype=buffers[a.name].dtype).copy()
                out[a.name] = BufferImage(data, bytes(host[:guard_bytes]),
                                          bytes(host[al.nbytes - guard_bytes:]))
            return RunResult("ok", buffers=out)
        except DeviceError as exc:
            return RunResult("fault", str(exc))
        finally:
            for al in allocs.values():
                self._free(al)

    def time(self, codes: list[bytes], spec: LaunchSpec, buffers: dict[str, np.ndarray], *,
             warmup: int = 3, repetitions: int = 20) -> list[list[float]]:
        hip = self._hip
        fns = [self._function(c, spec.kernel) for c in codes]
        kernels = [load(c).kernel(spec.kernel) for c in codes]
        allocs, pointers = self._upload(spec, buffers, 0, 0)
        flush = self._alloc(L2_FLUSH_BYTES)
        start = _check(hip.hipEventCreate(), "hipEventCreate")
        stop = _check(hip.hipEventCreate(), "hipEventCreate")
        try:
            args = [kernarg_bytes(k, spec, buffers, pointers) for k in kernels]

            def timed_run(rep: int, i: int) -> float:
                _check(hip.hipMemsetAsync(flush.ptr, rep & 0xFF, flush.nbytes, None),
                       "hipMemsetAsync (L2 flush)")
                _check(hip.hipEventRecord(start, None), "hipEventRecord")
                self._launch(fns[i], spec, args[i])
                _check(hip.hipEventRecord(stop, None), "hipEventRecord")
                _check(hip.hipEventSynchronize(stop), "hipEventSynchronize")
                ms = _check(hip.hipEventElapsedTime(start, stop), "hipEventElapsedTime")
                return float(ms) / 1e3
            return interleaved_times(len(fns), warmup, repetitions, timed_run)
        finally:
            _check(hip.hipEventDestroy(start), "hipEventDestroy")
            _check(hip.hipEventDestroy(stop), "hipEventDestroy")
            self._free(flush)
            for al in allocs.values():
                self._free(al)
