// The built-in sample: deploy/examples/sample-fabric.yaml and sample-workloads.yaml, embedded at
// build time so `tidalctl place` with no files runs the very files a user can copy and edit.
#pragma once

namespace tidal {
extern const char* const kSampleFabricYaml;
extern const char* const kSampleWorkloadsYaml;
}  // namespace tidal
