# Sourced at the start of every command on the H200 machine (see ../shared/GPU_MACHINE.md): unpacks the
# Vulkan loader and GL dispatch libraries carried in .gl/ and points the loader at NVIDIA's ICD.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
