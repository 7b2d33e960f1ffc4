// LabelledJobAction: the upsert action of a five-minute interval job with an owner and labels, as
// the command path would apply it. Shared by the pg tests of labels and of bulk operations.
#pragma once

#include <cstdint>
#include <string>

#include "belfry/command.h"
#include "core/shard_hash.h"

namespace belfry {

// `labels` is a canonical label object ("" for none); `src_offset` is the command's offset in
// partition 0.
inline JobAction LabelledJobAction(const std::string& id, const std::string& owner, const std::string& labels,
                                   int64_t src_offset, int32_t shard_count) {
  JobAction a;
  a.id = a.spec.id = id;
  a.spec.interval_minutes = 5;
  a.spec.shard = ShardForId(id, shard_count);
  a.spec.topic = "t";
  a.spec.owner = owner;
  a.spec.details_json = "{}";
  a.spec.labels_json = labels;
  a.source = SourcePosition{0, src_offset, 0};
  return a;
}

}  // namespace belfry
