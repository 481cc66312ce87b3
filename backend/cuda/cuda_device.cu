// GPU discovery through the CUDA runtime; without a driver or a GPU the
// count says which, in words, and the program runs on CPU.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend/backend.h"
}

extern "C" bool sf_gpu_built(void) { return true; }

// CUDA's "driver version is insufficient" (35) is also what a machine with
// no driver at all gets: the driver's version (0 without one) tells which.
static void why_none(cudaError_t rc, sf_err *e) {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (rc == cudaErrorInsufficientDriver && driver == 0)
        sf_err_set(e, SF_OK, "no NVIDIA driver");
    else if (rc == cudaErrorInsufficientDriver)
        sf_err_set(e, SF_OK, "the NVIDIA driver supports CUDA %d.%d, and this seqfeed needs %d.%d: update the driver",
                   driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    else if (rc == cudaErrorNoDevice)
        sf_err_set(e, SF_OK, "no GPU: the NVIDIA driver finds none%s",
                   getenv("CUDA_VISIBLE_DEVICES") ? " that CUDA_VISIBLE_DEVICES lets it see" : "");
    else
        sf_err_set(e, SF_OK, "no usable GPU: %s (CUDA error %d)", cudaGetErrorString(rc), (int)rc);
}

extern "C" int sf_gpu_count(sf_err *e) {
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        cudaGetLastError();  // sticky: later calls start clean
        why_none(rc, e);
        return 0;
    }
    if (n == 0) why_none(cudaErrorNoDevice, e);
    return n;
}

extern "C" int sf_gpu_capability(int dev) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return 10 * major + minor;
}

extern "C" int sf_gpu_bus_id(int dev, char *id, size_t len) {
    if (cudaDeviceGetPCIBusId(id, (int)len, dev) == cudaSuccess) return 0;
    cudaGetLastError();
    return SF_EINVAL;
}

extern "C" int sf_gpu_describe(int dev, char *name, size_t name_len, size_t *memory, sf_err *e) {
    cudaDeviceProp prop;
    cudaError_t rc = cudaGetDeviceProperties(&prop, dev);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        return sf_err_set(e, SF_EINVAL, "GPU %d: %s", dev, cudaGetErrorString(rc));
    }
    snprintf(name, name_len, "%s (sm_%d%d)", prop.name, prop.major, prop.minor);
    *memory = prop.totalGlobalMem;
    return 0;
}
