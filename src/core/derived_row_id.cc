#include "core/derived_row_id.h"

#include <array>
#include <charconv>

namespace belfry {
namespace {

struct Marker {
  DerivedKind kind;
  std::string_view text;
};

constexpr std::array<Marker, 3> kMarkers = {{
    {DerivedKind::kRetry, "#retry#"},
    {DerivedKind::kTrigger, "#trigger#"},
    {DerivedKind::kBackfill, "#backfill#"},
}};

std::string_view MarkerText(DerivedKind kind) {
  for (const Marker& m : kMarkers) {
    if (m.kind == kind) return m.text;
  }
  return {};
}

// A decimal integer that is the whole of `text`.
template <typename Int>
bool ParseWhole(std::string_view text, Int* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, *out);
  return r.ec == std::errc() && r.ptr == end;
}

}  // namespace

const char* DerivedKindName(DerivedKind kind) {
  switch (kind) {
    case DerivedKind::kRetry:
      return "retry";
    case DerivedKind::kTrigger:
      return "trigger";
    case DerivedKind::kBackfill:
      return "backfill";
  }
  return "";
}

std::string DerivedRowId(std::string_view job_id, DerivedKind kind, EpochMs scheduled_for_ms, int32_t attempt) {
  std::string id(job_id);
  id.append(MarkerText(kind));
  id.append(std::to_string(scheduled_for_ms));
  if (kind == DerivedKind::kRetry) {
    id.push_back('#');
    id.append(std::to_string(attempt));
  }
  return id;
}

std::optional<DerivedRowRef> ParseDerivedRowId(std::string_view id) {
  // The last '#' that opens a marker: a job id may itself contain '#', never a marker.
  for (const Marker& m : kMarkers) {
    const size_t at = id.rfind(m.text);
    if (at == std::string_view::npos || at == 0) continue;
    std::string_view rest = id.substr(at + m.text.size());
    DerivedRowRef ref;
    ref.job_id = id.substr(0, at);
    ref.kind = m.kind;
    if (m.kind == DerivedKind::kRetry) {
      const size_t hash = rest.find('#');
      if (hash == std::string_view::npos) return std::nullopt;
      if (!ParseWhole(rest.substr(hash + 1), &ref.attempt) || ref.attempt < 1) return std::nullopt;
      rest = rest.substr(0, hash);
    }
    if (!ParseWhole(rest, &ref.scheduled_for_ms)) return std::nullopt;
    return ref;
  }
  return std::nullopt;
}

std::optional<std::string_view> ReservedIdMarker(std::string_view id) {
  for (const Marker& m : kMarkers) {
    if (id.find(m.text) != std::string_view::npos) return m.text;
  }
  return std::nullopt;
}

}  // namespace belfry
