#include "core/job_change.h"

#include <fmt/format.h>

#include <iterator>
#include <nlohmann/json.hpp>

#include "core/job_json.h"
#include "core/json_writer.h"

namespace belfry {

std::optional<JobChange> JobChangeBetween(const std::string& job_id, const std::string& op,
                                          const std::optional<StoredJob>& before,
                                          const std::optional<StoredJob>& after) {
  if (!before && !after) return std::nullopt;
  JobChange change;
  change.job_id = job_id;
  change.op = op;
  if (!before) {
    change.after_json = EncodeJobJson(*after);
    return change;
  }
  if (!after) {
    change.before_json = EncodeJobJson(*before);
    return change;
  }
  const std::vector<JobViewField> was = JobViewFields(*before);
  const std::vector<JobViewField> is = JobViewFields(*after);
  // A field only some rows have (retryOf, manualOf...) is one a job keeps for life, so the two
  // lists align; should they not, both views are kept whole.
  if (was.size() != is.size()) {
    change.before_json = EncodeJobViewFields(was);
    change.after_json = EncodeJobViewFields(is);
    return change;
  }
  // The id, the fields that differ, and updatedAt; nothing when only updatedAt moved.
  std::vector<JobViewField> old_fields;
  std::vector<JobViewField> new_fields;
  bool changed = false;
  for (size_t i = 0; i < was.size(); ++i) {
    const bool always = was[i].name == "id" || was[i].name == "updatedAt";
    const bool differs = was[i].name != is[i].name || was[i].value != is[i].value;
    if (differs && was[i].name != "updatedAt") changed = true;
    if (always || differs) {
      old_fields.push_back(was[i]);
      new_fields.push_back(is[i]);
    }
  }
  if (!changed) return std::nullopt;
  change.before_json = EncodeJobViewFields(old_fields);
  change.after_json = EncodeJobViewFields(new_fields);
  return change;
}

std::string JobFireSnapshot(const std::string& job_id) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, job_id);
  out.push_back('}');
  return out;
}

namespace {

using View = nlohmann::ordered_json;

std::optional<View> ParseView(const std::string& json) {
  if (json.empty()) return std::nullopt;
  View v = View::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!v.is_object()) return std::nullopt;
  return v;
}

// `base` with each of `fields`' members set (a stored change's fields over a whole view).
View Overlay(View base, const View& fields) {
  for (const auto& [name, value] : fields.items()) base[name] = value;
  return base;
}

}  // namespace

bool StoresChangedFields(const JobChange& change) {
  return !change.before_json.empty() && !change.after_json.empty();
}

void ExpandJobChanges(const std::string& current_json, std::vector<JobChange>* newest_first) {
  std::vector<JobChange>& changes = *newest_first;
  // Whether each change is whole, and then its after as a view (a delete's is none).
  std::vector<bool> whole(changes.size(), false);
  std::vector<std::optional<View>> whole_after(changes.size());
  bool all_whole = true;
  // Backward, from the job as it is: each change's after is the state the next one started from.
  std::optional<View> state = ParseView(current_json);
  for (size_t i = 0; i < changes.size(); ++i) {
    JobChange& c = changes[i];
    std::optional<View> stored_before = ParseView(c.before_json);
    std::optional<View> stored_after = ParseView(c.after_json);
    if (!stored_after) {  // a delete: its before is the whole job
      whole[i] = true;
      state = std::move(stored_before);
      continue;
    }
    if (!stored_before) {  // a create: its after is the whole job
      whole[i] = true;
      whole_after[i] = std::move(stored_after);
      state.reset();
      continue;
    }
    if (!state) {  // no known state to stand on: the forward pass may find one
      all_whole = false;
      continue;
    }
    View after = Overlay(std::move(*state), *stored_after);
    View before = Overlay(after, *stored_before);
    c.after_json = after.dump();
    c.before_json = before.dump();
    whole[i] = true;
    whole_after[i] = std::move(after);
    state = std::move(before);
  }
  if (all_whole) return;
  // Forward, from the oldest whole view, for the changes the backward pass could not reach (a
  // job whose row went without a recorded delete, such as a swept one-shot).
  state.reset();
  for (size_t k = changes.size(); k-- > 0;) {
    JobChange& c = changes[k];
    if (whole[k]) {
      state = std::move(whole_after[k]);
      continue;
    }
    if (!state) continue;  // nothing whole before it: left as stored
    View before = Overlay(std::move(*state), *ParseView(c.before_json));
    View after = Overlay(before, *ParseView(c.after_json));
    c.before_json = before.dump();
    c.after_json = after.dump();
    state = std::move(after);
  }
}

namespace {

void AppendRawJsonOrNull(std::string* out, const std::string& json) { out->append(json.empty() ? "null" : json); }

}  // namespace

std::string EncodeJobChangeJson(const JobChange& c) {
  std::string out;
  out.reserve(256 + c.before_json.size() + c.after_json.size() + c.detail_json.size());
  fmt::format_to(std::back_inserter(out), "{{\"version\":{},\"changeId\":{},\"jobId\":", kJobChangeEventVersion,
                 c.change_id);
  AppendJsonString(&out, c.job_id);
  out.append(",\"op\":");
  AppendJsonString(&out, c.op);
  out.append(",\"bulkId\":");
  AppendJsonStringOrNull(&out, c.bulk_id);
  out.append(",\"actor\":");
  AppendJsonStringOrNull(&out, c.actor);
  out.append(",\"reason\":");
  AppendJsonStringOrNull(&out, c.reason);
  fmt::format_to(std::back_inserter(out), ",\"source\":{{\"partition\":{},\"offset\":{},\"timestamp\":",
                 c.source.partition, c.source.offset);
  AppendJsonTimeOrNull(&out, c.source.timestamp_ms);
  out.append("},\"changedAt\":");
  AppendJsonTimeOrNull(&out, c.changed_at);
  out.append(",\"before\":");
  AppendRawJsonOrNull(&out, c.before_json);
  out.append(",\"after\":");
  AppendRawJsonOrNull(&out, c.after_json);
  out.append(",\"detail\":");
  AppendRawJsonOrNull(&out, c.detail_json);
  out.push_back('}');
  return out;
}

std::string EncodeJobChangePage(const std::string& job_id, const std::vector<JobChange>& changes, int64_t limit) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, job_id);
  out.append(",\"changes\":[");
  for (size_t i = 0; i < changes.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(EncodeJobChangeJson(changes[i]));
  }
  out.append("],\"next_cursor\":");
  const bool full = !changes.empty() && static_cast<int64_t>(changes.size()) >= limit;
  AppendJsonStringOrNull(&out, full ? std::to_string(changes.back().change_id) : std::string());
  out.push_back('}');
  return out;
}

}  // namespace belfry
