// projects::profile_record: a per-layer profile as the project stores it (ProfileRecord).
#pragma once
#include <cstdint>

#include "engine/graph/layer_profile.h"
#include "projects/project.h"

namespace kiln::projects {

// The record of `profile` (its device, precision, batch size, steps and graph::profile_json) for
// graph version `graph_version` (0: none), as `kiln bench --profile --project` and the Studio's
// profile panel store it (Project::add_profile).
ProfileRecord profile_record(const graph::LayerProfile& profile, int64_t graph_version);

}  // namespace kiln::projects
