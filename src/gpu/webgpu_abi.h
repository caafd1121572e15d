// webgpu_abi.h — our declarations of the webgpu.h subset Zero-TVM uses, matched to the ABI of the
// pinned Dawn binary (libwebgpu_wrapper.so from npm bun-webgpu-linux-x64@0.1.7, ~mid-2025 API).
// Layouts and enum values were verified on that binary by ../shared/tools/dawn-probe; the error-scope
// declarations at the end follow the same 2025 API and are exercised by tests/gpu_device_test.cpp.
// x86-64 SysV / LP64 only.
#pragma once
#include <stddef.h>
#include <stdint.h>

extern "C" {

typedef uint32_t WGPUBool;          // 32-bit bool
typedef uint64_t WGPUFlags;         // NOTE: 64-bit flags in the 2024+ API (was uint32 before)
typedef WGPUFlags WGPUBufferUsage;
typedef WGPUFlags WGPUMapMode;
typedef WGPUFlags WGPUShaderStage;

#define WGPU_STRLEN SIZE_MAX
#define WGPU_WHOLE_SIZE UINT64_MAX
#define WGPU_WHOLE_MAP_SIZE SIZE_MAX
#define WGPU_LIMIT_U32_UNDEFINED UINT32_MAX
#define WGPU_LIMIT_U64_UNDEFINED UINT64_MAX
#define WGPU_QUERY_SET_INDEX_UNDEFINED UINT32_MAX

typedef struct WGPUInstanceImpl* WGPUInstance;
typedef struct WGPUAdapterImpl* WGPUAdapter;
typedef struct WGPUDeviceImpl* WGPUDevice;
typedef struct WGPUQueueImpl* WGPUQueue;
typedef struct WGPUBufferImpl* WGPUBuffer;
typedef struct WGPUShaderModuleImpl* WGPUShaderModule;
typedef struct WGPUComputePipelineImpl* WGPUComputePipeline;
typedef struct WGPUBindGroupLayoutImpl* WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl* WGPUBindGroup;
typedef struct WGPUPipelineLayoutImpl* WGPUPipelineLayout;
typedef struct WGPUCommandEncoderImpl* WGPUCommandEncoder;
typedef struct WGPUComputePassEncoderImpl* WGPUComputePassEncoder;
typedef struct WGPUCommandBufferImpl* WGPUCommandBuffer;
typedef struct WGPUQuerySetImpl* WGPUQuerySet;
typedef struct WGPUSamplerImpl* WGPUSampler;
typedef struct WGPUTextureViewImpl* WGPUTextureView;
typedef struct WGPUSurfaceImpl* WGPUSurface;

// ---------------------------------------------------------------- enums (values of the 2024+ API)
enum : uint32_t {  // WGPUSType (verified on this binary via Dawn's "Unsupported sType" errors)
  WGPUSType_ShaderSourceSPIRV = 0x1,
  WGPUSType_ShaderSourceWGSL = 0x2,                     // old header: ShaderModuleWGSLDescriptor = 0x6
  // 0xA..0xD are unknown to this build (AdapterPropertiesSubgroups is gone: sizes are in WGPUAdapterInfo)
  WGPUSType_CompatibilityModeLimits = 0x20000,          // bun-webgpu lists 0x20000 as TextureBindingViewDimension (now 0x20001)
  WGPUSType_DawnTogglesDescriptor = 0x5000A,
  WGPUSType_AdapterPropertiesSubgroupMatrixConfigs = 0x5003B,
};
enum : uint32_t {  // WGPUCallbackMode
  WGPUCallbackMode_WaitAnyOnly = 1, WGPUCallbackMode_AllowProcessEvents = 2, WGPUCallbackMode_AllowSpontaneous = 3 };
enum : uint32_t {  // WGPUWaitStatus (printed numerically; 1/2 are certain)
  WGPUWaitStatus_Success = 1, WGPUWaitStatus_TimedOut = 2 };
enum : uint32_t {  // WGPUStatus
  WGPUStatus_Success = 1, WGPUStatus_Error = 2 };
enum : uint32_t {  // WGPURequestAdapterStatus
  WGPURequestAdapterStatus_Success = 1, WGPURequestAdapterStatus_CallbackCancelled = 2,
  WGPURequestAdapterStatus_Unavailable = 3, WGPURequestAdapterStatus_Error = 4 };
enum : uint32_t {  // WGPURequestDeviceStatus
  WGPURequestDeviceStatus_Success = 1, WGPURequestDeviceStatus_CallbackCancelled = 2, WGPURequestDeviceStatus_Error = 3 };
enum : uint32_t {  // WGPUMapAsyncStatus
  WGPUMapAsyncStatus_Success = 1, WGPUMapAsyncStatus_CallbackCancelled = 2, WGPUMapAsyncStatus_Error = 3, WGPUMapAsyncStatus_Aborted = 4 };
enum : uint32_t {  // WGPUQueueWorkDoneStatus
  WGPUQueueWorkDoneStatus_Success = 1, WGPUQueueWorkDoneStatus_CallbackCancelled = 2, WGPUQueueWorkDoneStatus_Error = 3 };
enum : uint32_t {  // WGPUCompilationInfoRequestStatus
  WGPUCompilationInfoRequestStatus_Success = 1 };
enum : uint32_t {  // WGPUErrorType
  WGPUErrorType_NoError = 1, WGPUErrorType_Validation = 2, WGPUErrorType_OutOfMemory = 3,
  WGPUErrorType_Internal = 4, WGPUErrorType_Unknown = 5 };
enum : uint32_t {  // WGPUFeatureLevel
  WGPUFeatureLevel_Undefined = 0, WGPUFeatureLevel_Compatibility = 1, WGPUFeatureLevel_Core = 2 };
enum : uint32_t {  // WGPUPowerPreference
  WGPUPowerPreference_Undefined = 0, WGPUPowerPreference_LowPower = 1, WGPUPowerPreference_HighPerformance = 2 };
enum : uint32_t {  // WGPUBackendType
  WGPUBackendType_Undefined = 0, WGPUBackendType_Null = 1, WGPUBackendType_WebGPU = 2, WGPUBackendType_D3D11 = 3,
  WGPUBackendType_D3D12 = 4, WGPUBackendType_Metal = 5, WGPUBackendType_Vulkan = 6, WGPUBackendType_OpenGL = 7,
  WGPUBackendType_OpenGLES = 8 };
enum : uint32_t {  // WGPUAdapterType
  WGPUAdapterType_DiscreteGPU = 1, WGPUAdapterType_IntegratedGPU = 2, WGPUAdapterType_CPU = 3, WGPUAdapterType_Unknown = 4 };
enum : uint32_t {  // WGPUQueryType
  WGPUQueryType_Occlusion = 1, WGPUQueryType_Timestamp = 2 };
enum : uint32_t {  // WGPUFeatureName (standard 0x1..0x12, Dawn-specific from 0x50000) — values verified on this binary
  WGPUFeatureName_TimestampQuery = 0x3,
  WGPUFeatureName_ShaderF16 = 0xA,                      // old (2022-23) headers had different numbering
  WGPUFeatureName_Subgroups = 0x11,
  WGPUFeatureName_CoreFeaturesAndLimits = 0x12,
  WGPUFeatureName_ChromiumExperimentalTimestampQueryInsidePasses = 0x50003,
  WGPUFeatureName_ImplicitDeviceSynchronization = 0x50004,
  // 0x50005 (ChromiumExperimentalImmediateData) is INVALID in this build; SubgroupsF16 no longer exists.
  WGPUFeatureName_HostMappedPointer = 0x50010,          // bun-webgpu's table says 0x50011: it is off by one from 0x50008
  WGPUFeatureName_AdapterPropertiesMemoryHeaps = 0x50015,
  WGPUFeatureName_ChromiumExperimentalSubgroupMatrix = 0x50037,  // bun-webgpu says 0x50038 (wrong for this binary)
  WGPUFeatureName_TextureFormatsTier1 = 0x5003A,
};

// Buffer usage / map mode (64-bit)
static const WGPUBufferUsage WGPUBufferUsage_MapRead = 0x1, WGPUBufferUsage_MapWrite = 0x2,
    WGPUBufferUsage_CopySrc = 0x4, WGPUBufferUsage_CopyDst = 0x8, WGPUBufferUsage_Uniform = 0x40,
    WGPUBufferUsage_Storage = 0x80, WGPUBufferUsage_Indirect = 0x100, WGPUBufferUsage_QueryResolve = 0x200;
static const WGPUMapMode WGPUMapMode_Read = 0x1, WGPUMapMode_Write = 0x2;

// ---------------------------------------------------------------- basic structs
typedef struct WGPUStringView { const char* data; size_t length; } WGPUStringView;  // {NULL, WGPU_STRLEN} = null
typedef struct WGPUChainedStruct { const struct WGPUChainedStruct* next; uint32_t sType; } WGPUChainedStruct;
typedef struct WGPUChainedStructOut { struct WGPUChainedStructOut* next; uint32_t sType; } WGPUChainedStructOut;
typedef struct WGPUFuture { uint64_t id; } WGPUFuture;
typedef struct WGPUFutureWaitInfo { WGPUFuture future; WGPUBool completed; } WGPUFutureWaitInfo;

// This build still has the *InstanceCapabilities* era API (wgpuGetInstanceCapabilities exported;
// newer Dawn replaced it with requiredFeatures=[TimedWaitAny] + WGPUInstanceLimits).
typedef struct WGPUInstanceCapabilities {
  WGPUChainedStructOut* nextInChain;
  WGPUBool timedWaitAnyEnable;
  size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;
typedef struct WGPUInstanceDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUInstanceCapabilities capabilities;
} WGPUInstanceDescriptor;

typedef struct WGPUDawnTogglesDescriptor {  // Dawn extension, sType 0x5000A
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char* const* enabledToggles;
  size_t disabledToggleCount;
  const char* const* disabledToggles;
} WGPUDawnTogglesDescriptor;

typedef struct WGPURequestAdapterOptions {
  const WGPUChainedStruct* nextInChain;
  uint32_t featureLevel;
  uint32_t powerPreference;
  WGPUBool forceFallbackAdapter;
  uint32_t backendType;
  WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef void (*WGPURequestAdapterCallback)(uint32_t status, WGPUAdapter adapter, WGPUStringView message, void* ud1, void* ud2);
typedef void (*WGPURequestDeviceCallback)(uint32_t status, WGPUDevice device, WGPUStringView message, void* ud1, void* ud2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice* device, uint32_t reason, WGPUStringView message, void* ud1, void* ud2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice* device, uint32_t type, WGPUStringView message, void* ud1, void* ud2);
typedef void (*WGPUBufferMapCallback)(uint32_t status, WGPUStringView message, void* ud1, void* ud2);
typedef void (*WGPUQueueWorkDoneCallback)(uint32_t status, void* ud1, void* ud2);  // no message in this build
struct WGPUCompilationInfo;
typedef void (*WGPUCompilationInfoCallback)(uint32_t status, const struct WGPUCompilationInfo* info, void* ud1, void* ud2);

// All "XxxCallbackInfo" structs share this layout (40 bytes), passed BY VALUE.
#define WGPU_CALLBACK_INFO(Name, CbType) \
  typedef struct Name { const WGPUChainedStruct* nextInChain; uint32_t mode; CbType callback; void* userdata1; void* userdata2; } Name;
WGPU_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback)
WGPU_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback)
WGPU_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback)
WGPU_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback)
WGPU_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback)
WGPU_CALLBACK_INFO(WGPUCompilationInfoCallbackInfo, WGPUCompilationInfoCallback)
// ...except the uncaptured-error one, which has no mode field (32 bytes).
typedef struct WGPUUncapturedErrorCallbackInfo {
  const WGPUChainedStruct* nextInChain; WGPUUncapturedErrorCallback callback; void* userdata1; void* userdata2;
} WGPUUncapturedErrorCallbackInfo;

// Dawn's log messages (device warnings, and with the dump_shaders toggle the generated shaders): no
// mode field, like the uncaptured-error one. Types: 1 verbose, 2 info, 3 warning, 4 error. Exercised by
// the shader_stats test (ZTVM_DUMP_SPIRV writes nothing unless this callback receives the dumps).
typedef void (*WGPULoggingCallback)(uint32_t type, WGPUStringView message, void* userdata1, void* userdata2);
typedef struct WGPULoggingCallbackInfo {
  const WGPUChainedStruct* nextInChain; WGPULoggingCallback callback; void* userdata1; void* userdata2;
} WGPULoggingCallbackInfo;

typedef struct WGPUAdapterInfo {
  WGPUChainedStructOut* nextInChain;
  WGPUStringView vendor, architecture, device, description;
  uint32_t backendType, adapterType, vendorID, deviceID;
  uint32_t subgroupMinSize, subgroupMaxSize;  // new in 2025
} WGPUAdapterInfo;

typedef struct WGPUSubgroupMatrixConfig {
  uint32_t componentType, resultComponentType;  // 1=f32 2=f16 3=u32 4=i32 (5=u8 6=i8 in later Dawn)
  uint32_t M, N, K;
} WGPUSubgroupMatrixConfig;
typedef struct WGPUAdapterPropertiesSubgroupMatrixConfigs {
  WGPUChainedStructOut chain;
  size_t configCount;
  const WGPUSubgroupMatrixConfig* configs;
} WGPUAdapterPropertiesSubgroupMatrixConfigs;

typedef struct WGPUSupportedFeatures { size_t featureCount; const uint32_t* features; } WGPUSupportedFeatures;
typedef struct WGPUSupportedWGSLLanguageFeatures { size_t featureCount; const uint32_t* features; } WGPUSupportedWGSLLanguageFeatures;

typedef struct WGPULimits {
  WGPUChainedStructOut* nextInChain;
  uint32_t maxTextureDimension1D, maxTextureDimension2D, maxTextureDimension3D, maxTextureArrayLayers;
  uint32_t maxBindGroups, maxBindGroupsPlusVertexBuffers, maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout, maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage, maxSamplersPerShaderStage, maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage, maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize, maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment, minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes, maxVertexBufferArrayStride, maxInterStageShaderVariables;
  uint32_t maxColorAttachments, maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize, maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX, maxComputeWorkgroupSizeY, maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  uint32_t maxImmediateSize;  // 2025: push-constant-like "immediates"
  uint32_t maxStorageBuffersInVertexStage, maxStorageTexturesInVertexStage;
  uint32_t maxStorageBuffersInFragmentStage, maxStorageTexturesInFragmentStage;
} WGPULimits;

typedef struct WGPUQueueDescriptor { const WGPUChainedStruct* nextInChain; WGPUStringView label; } WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const uint32_t* requiredFeatures;
  const WGPULimits* requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
  const WGPUChainedStruct* nextInChain; WGPUStringView label;
  WGPUBufferUsage usage; uint64_t size; WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUShaderModuleDescriptor { const WGPUChainedStruct* nextInChain; WGPUStringView label; } WGPUShaderModuleDescriptor;
typedef struct WGPUShaderSourceWGSL { WGPUChainedStruct chain; WGPUStringView code; } WGPUShaderSourceWGSL;

typedef struct WGPUCompilationMessage {  // utf16 fields moved to a Dawn chained struct in this era
  const WGPUChainedStruct* nextInChain; WGPUStringView message; uint32_t type;  // 1=error 2=warning 3=info
  uint64_t lineNum, linePos, offset, length;
} WGPUCompilationMessage;
typedef struct WGPUCompilationInfo {
  const WGPUChainedStruct* nextInChain; size_t messageCount; const WGPUCompilationMessage* messages;
} WGPUCompilationInfo;

typedef struct WGPUConstantEntry { const WGPUChainedStruct* nextInChain; WGPUStringView key; double value; } WGPUConstantEntry;
typedef struct WGPUComputeState {
  const WGPUChainedStruct* nextInChain; WGPUShaderModule module; WGPUStringView entryPoint;
  size_t constantCount; const WGPUConstantEntry* constants;
} WGPUComputeState;
typedef struct WGPUComputePipelineDescriptor {
  const WGPUChainedStruct* nextInChain; WGPUStringView label; WGPUPipelineLayout layout; WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBindGroupEntry {
  const WGPUChainedStruct* nextInChain; uint32_t binding; WGPUBuffer buffer; uint64_t offset; uint64_t size;
  WGPUSampler sampler; WGPUTextureView textureView;
} WGPUBindGroupEntry;
typedef struct WGPUBindGroupDescriptor {
  const WGPUChainedStruct* nextInChain; WGPUStringView label; WGPUBindGroupLayout layout;
  size_t entryCount; const WGPUBindGroupEntry* entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor { const WGPUChainedStruct* nextInChain; WGPUStringView label; } WGPUCommandEncoderDescriptor;
typedef struct WGPUCommandBufferDescriptor { const WGPUChainedStruct* nextInChain; WGPUStringView label; } WGPUCommandBufferDescriptor;
typedef struct WGPUPassTimestampWrites {  // has nextInChain in this era
  const WGPUChainedStruct* nextInChain; WGPUQuerySet querySet;
  uint32_t beginningOfPassWriteIndex, endOfPassWriteIndex;
} WGPUPassTimestampWrites;
typedef struct WGPUComputePassDescriptor {
  const WGPUChainedStruct* nextInChain; WGPUStringView label; const WGPUPassTimestampWrites* timestampWrites;
} WGPUComputePassDescriptor;
typedef struct WGPUQuerySetDescriptor {
  const WGPUChainedStruct* nextInChain; WGPUStringView label; uint32_t type; uint32_t count;
} WGPUQuerySetDescriptor;

// ---------------------------------------------------------------- ABI size checks (LP64)
static_assert(sizeof(WGPUStringView) == 16, "");
static_assert(sizeof(WGPUInstanceDescriptor) == 32, "");
static_assert(sizeof(WGPURequestAdapterOptions) == 32, "");
static_assert(sizeof(WGPURequestAdapterCallbackInfo) == 40, "");
static_assert(sizeof(WGPUUncapturedErrorCallbackInfo) == 32, "");
static_assert(sizeof(WGPUAdapterInfo) == 96, "");
static_assert(sizeof(WGPULimits) == 168, "");
static_assert(sizeof(WGPUDeviceDescriptor) == 144, "");
static_assert(sizeof(WGPUBufferDescriptor) == 48, "");
static_assert(sizeof(WGPUBindGroupEntry) == 56, "");
static_assert(sizeof(WGPUComputePipelineDescriptor) == 80, "");
static_assert(sizeof(WGPUCompilationMessage) == 64, "");

// ---------------------------------------------------------------- functions
WGPUInstance wgpuCreateInstance(const WGPUInstanceDescriptor* desc);
uint32_t wgpuGetInstanceCapabilities(WGPUInstanceCapabilities* caps);
WGPUFuture wgpuInstanceRequestAdapter(WGPUInstance, const WGPURequestAdapterOptions*, WGPURequestAdapterCallbackInfo);
uint32_t wgpuInstanceWaitAny(WGPUInstance, size_t futureCount, WGPUFutureWaitInfo* futures, uint64_t timeoutNS);
void wgpuInstanceProcessEvents(WGPUInstance);
void wgpuDeviceSetLoggingCallback(WGPUDevice, WGPULoggingCallbackInfo);
uint32_t wgpuInstanceGetWGSLLanguageFeatures(WGPUInstance, WGPUSupportedWGSLLanguageFeatures*);
void wgpuSupportedWGSLLanguageFeaturesFreeMembers(WGPUSupportedWGSLLanguageFeatures);
void wgpuInstanceRelease(WGPUInstance);

uint32_t wgpuAdapterGetInfo(WGPUAdapter, WGPUAdapterInfo*);
void wgpuAdapterInfoFreeMembers(WGPUAdapterInfo);
void wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers(WGPUAdapterPropertiesSubgroupMatrixConfigs);
void wgpuAdapterGetFeatures(WGPUAdapter, WGPUSupportedFeatures*);
WGPUBool wgpuAdapterHasFeature(WGPUAdapter, uint32_t feature);
void wgpuSupportedFeaturesFreeMembers(WGPUSupportedFeatures);
uint32_t wgpuAdapterGetLimits(WGPUAdapter, WGPULimits*);
WGPUFuture wgpuAdapterRequestDevice(WGPUAdapter, const WGPUDeviceDescriptor*, WGPURequestDeviceCallbackInfo);
void wgpuAdapterRelease(WGPUAdapter);

WGPUQueue wgpuDeviceGetQueue(WGPUDevice);
void wgpuDeviceForceLoss(WGPUDevice, uint32_t reason, WGPUStringView message);
uint32_t wgpuDeviceGetLimits(WGPUDevice, WGPULimits*);
WGPUBool wgpuDeviceHasFeature(WGPUDevice, uint32_t feature);
WGPUBuffer wgpuDeviceCreateBuffer(WGPUDevice, const WGPUBufferDescriptor*);
WGPUShaderModule wgpuDeviceCreateShaderModule(WGPUDevice, const WGPUShaderModuleDescriptor*);
WGPUComputePipeline wgpuDeviceCreateComputePipeline(WGPUDevice, const WGPUComputePipelineDescriptor*);
WGPUBindGroup wgpuDeviceCreateBindGroup(WGPUDevice, const WGPUBindGroupDescriptor*);
WGPUCommandEncoder wgpuDeviceCreateCommandEncoder(WGPUDevice, const WGPUCommandEncoderDescriptor*);
WGPUQuerySet wgpuDeviceCreateQuerySet(WGPUDevice, const WGPUQuerySetDescriptor*);
void wgpuDeviceTick(WGPUDevice);  // Dawn-specific
void wgpuDeviceDestroy(WGPUDevice);
void wgpuDeviceRelease(WGPUDevice);

WGPUFuture wgpuShaderModuleGetCompilationInfo(WGPUShaderModule, WGPUCompilationInfoCallbackInfo);
void wgpuShaderModuleRelease(WGPUShaderModule);
WGPUBindGroupLayout wgpuComputePipelineGetBindGroupLayout(WGPUComputePipeline, uint32_t groupIndex);
void wgpuComputePipelineRelease(WGPUComputePipeline);
void wgpuBindGroupLayoutRelease(WGPUBindGroupLayout);
void wgpuBindGroupRelease(WGPUBindGroup);

WGPUComputePassEncoder wgpuCommandEncoderBeginComputePass(WGPUCommandEncoder, const WGPUComputePassDescriptor*);
void wgpuCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder, WGPUBuffer src, uint64_t srcOffset, WGPUBuffer dst, uint64_t dstOffset, uint64_t size);
void wgpuCommandEncoderResolveQuerySet(WGPUCommandEncoder, WGPUQuerySet, uint32_t firstQuery, uint32_t queryCount, WGPUBuffer dst, uint64_t dstOffset);
WGPUCommandBuffer wgpuCommandEncoderFinish(WGPUCommandEncoder, const WGPUCommandBufferDescriptor*);
void wgpuCommandEncoderRelease(WGPUCommandEncoder);
void wgpuComputePassEncoderSetPipeline(WGPUComputePassEncoder, WGPUComputePipeline);
void wgpuComputePassEncoderSetBindGroup(WGPUComputePassEncoder, uint32_t groupIndex, WGPUBindGroup, size_t dynamicOffsetCount, const uint32_t* dynamicOffsets);
void wgpuComputePassEncoderDispatchWorkgroups(WGPUComputePassEncoder, uint32_t x, uint32_t y, uint32_t z);
void wgpuComputePassEncoderEnd(WGPUComputePassEncoder);
void wgpuComputePassEncoderRelease(WGPUComputePassEncoder);
void wgpuCommandBufferRelease(WGPUCommandBuffer);

void wgpuQueueSubmit(WGPUQueue, size_t count, const WGPUCommandBuffer* commands);
void wgpuQueueWriteBuffer(WGPUQueue, WGPUBuffer, uint64_t offset, const void* data, size_t size);
WGPUFuture wgpuQueueOnSubmittedWorkDone(WGPUQueue, WGPUQueueWorkDoneCallbackInfo);
void wgpuQueueRelease(WGPUQueue);

WGPUFuture wgpuBufferMapAsync(WGPUBuffer, WGPUMapMode mode, size_t offset, size_t size, WGPUBufferMapCallbackInfo);
const void* wgpuBufferGetConstMappedRange(WGPUBuffer, size_t offset, size_t size);
void wgpuBufferUnmap(WGPUBuffer);
void wgpuBufferDestroy(WGPUBuffer);
void wgpuBufferRelease(WGPUBuffer);
void wgpuQuerySetRelease(WGPUQuerySet);

}  // extern "C"

// Explicit bind group / pipeline layouts (verified on this binary with a positive + negative test; not used by probe.cpp)
enum : uint32_t {  // WGPUBufferBindingType — NEW numbering (old headers: Undefined=0 Uniform=1 Storage=2 ReadOnlyStorage=3)
  WGPUBufferBindingType_BindingNotUsed = 0, WGPUBufferBindingType_Undefined = 1, WGPUBufferBindingType_Uniform = 2,
  WGPUBufferBindingType_Storage = 3, WGPUBufferBindingType_ReadOnlyStorage = 4 };
static const WGPUShaderStage WGPUShaderStage_Vertex = 0x1, WGPUShaderStage_Fragment = 0x2, WGPUShaderStage_Compute = 0x4;
typedef struct WGPUBufferBindingLayout { const WGPUChainedStruct* nextInChain; uint32_t type; WGPUBool hasDynamicOffset; uint64_t minBindingSize; } WGPUBufferBindingLayout;
typedef struct WGPUSamplerBindingLayout { const WGPUChainedStruct* nextInChain; uint32_t type; } WGPUSamplerBindingLayout;
typedef struct WGPUTextureBindingLayout { const WGPUChainedStruct* nextInChain; uint32_t sampleType, viewDimension; WGPUBool multisampled; } WGPUTextureBindingLayout;
typedef struct WGPUStorageTextureBindingLayout { const WGPUChainedStruct* nextInChain; uint32_t access, format, viewDimension; } WGPUStorageTextureBindingLayout;
typedef struct WGPUBindGroupLayoutEntry {
  const WGPUChainedStruct* nextInChain; uint32_t binding; WGPUShaderStage visibility /*u64*/;
  uint32_t bindingArraySize;  // new 2025 field (0 = not an array); bun-webgpu treats it as padding "_alignment0"
  WGPUBufferBindingLayout buffer; WGPUSamplerBindingLayout sampler; WGPUTextureBindingLayout texture;
  WGPUStorageTextureBindingLayout storageTexture;
} WGPUBindGroupLayoutEntry;
typedef struct WGPUBindGroupLayoutDescriptor { const WGPUChainedStruct* nextInChain; WGPUStringView label; size_t entryCount; const WGPUBindGroupLayoutEntry* entries; } WGPUBindGroupLayoutDescriptor;
typedef struct WGPUPipelineLayoutDescriptor {
  const WGPUChainedStruct* nextInChain; WGPUStringView label; size_t bindGroupLayoutCount; const WGPUBindGroupLayout* bindGroupLayouts;
  uint32_t immediateSize;  // new 2025 field
} WGPUPipelineLayoutDescriptor;
static_assert(sizeof(WGPUBindGroupLayoutEntry) == 120, "");
extern "C" {
WGPUBindGroupLayout wgpuDeviceCreateBindGroupLayout(WGPUDevice, const WGPUBindGroupLayoutDescriptor*);
WGPUPipelineLayout wgpuDeviceCreatePipelineLayout(WGPUDevice, const WGPUPipelineLayoutDescriptor*);
void wgpuPipelineLayoutRelease(WGPUPipelineLayout);
}

// Error scopes (2025 API: the pop callback takes status, error type, message).
enum : uint32_t {  // WGPUErrorFilter
  WGPUErrorFilter_Validation = 1, WGPUErrorFilter_OutOfMemory = 2, WGPUErrorFilter_Internal = 3 };
enum : uint32_t {  // WGPUPopErrorScopeStatus
  WGPUPopErrorScopeStatus_Success = 1, WGPUPopErrorScopeStatus_CallbackCancelled = 2, WGPUPopErrorScopeStatus_Error = 3 };
typedef void (*WGPUPopErrorScopeCallback)(uint32_t status, uint32_t type, WGPUStringView message, void* ud1, void* ud2);
typedef struct WGPUPopErrorScopeCallbackInfo {
  const WGPUChainedStruct* nextInChain; uint32_t mode; WGPUPopErrorScopeCallback callback; void* userdata1; void* userdata2;
} WGPUPopErrorScopeCallbackInfo;
extern "C" {
void wgpuDevicePushErrorScope(WGPUDevice, uint32_t filter);
WGPUFuture wgpuDevicePopErrorScope(WGPUDevice, WGPUPopErrorScopeCallbackInfo);
void wgpuCommandEncoderClearBuffer(WGPUCommandEncoder, WGPUBuffer, uint64_t offset, uint64_t size);
uint64_t wgpuBufferGetSize(WGPUBuffer);
void wgpuComputePassEncoderWriteTimestamp(WGPUComputePassEncoder, WGPUQuerySet, uint32_t queryIndex);
void wgpuCommandEncoderWriteTimestamp(WGPUCommandEncoder, WGPUQuerySet, uint32_t queryIndex);
void wgpuQuerySetDestroy(WGPUQuerySet);
}
