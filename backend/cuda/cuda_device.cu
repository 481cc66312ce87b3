// GPU discovery through the CUDA runtime; without a driver every call says
// so and the program runs on CPU.
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "backend/backend.h"
}

extern "C" bool sf_gpu_built(void) { return true; }

extern "C" int sf_gpu_count(sf_err *e) {
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        // Without a driver this is cudaErrorInsufficientDriver (35) or
        // cudaErrorNoDevice; clear the sticky error so later calls start clean.
        cudaGetLastError();
        sf_err_set(e, SF_OK, "no usable GPU (%s, CUDA error %d)", cudaGetErrorString(rc), (int)rc);
        return 0;
    }
    if (n == 0) sf_err_set(e, SF_OK, "no GPU found by the CUDA driver");
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
