// Device-resident timing of our sorts (src/device_timing/cuda.rs): holds the stream until
// the host has queued the timed work behind it, so that the events around that work measure
// the GPU's time and not the host's launch latency (the blocking-kernel method of NVIDIA's
// nvbench). `flag` is host memory mapped into the device: the host sets it to 1 to release
// the stream. After `timeout_ns` the kernel gives up and writes 2, so that a host that never
// released (it blocked on something queued behind this kernel) learns the timing is void.
extern "C" __global__ void hold_stream(volatile unsigned int *flag, unsigned long long timeout_ns) {
    unsigned long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (*flag == 0u) {
        unsigned long long now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > timeout_ns) {
            *flag = 2u;
            return;
        }
    }
}
