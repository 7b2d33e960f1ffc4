#include "pg/connection_options.h"

#include <libpq-fe.h>

#include <memory>
#include <string_view>

namespace belfry {
namespace {

// A keyword=value value in single quotes, with ' and \ escaped (libpq-connect, "Keyword/Value
// Connection Strings").
void AppendQuoted(std::string* out, const char* value) {
  out->push_back('\'');
  for (const char* p = value; *p != '\0'; ++p) {
    if (*p == '\'' || *p == '\\') out->push_back('\\');
    out->push_back(*p);
  }
  out->push_back('\'');
}

}  // namespace

StatusOr<std::string> WithSessionSetting(const std::string& database_url, const std::string& name,
                                         const std::string& value) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(
      PQconninfoParse(database_url.c_str(), &error), &PQconninfoFree);
  if (options == nullptr) {
    std::string why = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return Status::Invalid("database_url", "database_url cannot be parsed: " + why);
  }
  const std::string setting = "-c " + name + "=" + value;
  std::string out;
  bool had_options = false;
  for (const PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
    const bool is_options = std::string_view(o->keyword) == "options";
    if (o->val == nullptr && !is_options) continue;
    std::string val = o->val != nullptr ? o->val : "";
    if (is_options) {
      had_options = true;
      val = val.empty() ? setting : val + " " + setting;
    }
    if (!out.empty()) out.push_back(' ');
    out.append(o->keyword);
    out.push_back('=');
    AppendQuoted(&out, val.c_str());
  }
  if (!had_options) return Status::Invalid("database_url", "libpq has no \"options\" parameter");
  return out;
}

}  // namespace belfry
