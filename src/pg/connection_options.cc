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

using ConninfoPtr = std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)>;

StatusOr<ConninfoPtr> ParseConninfo(const std::string& url, const char* key) {
  char* error = nullptr;
  ConninfoPtr options(PQconninfoParse(url.c_str(), &error), &PQconninfoFree);
  if (options == nullptr) {
    std::string why = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return Status::Invalid(key, std::string(key) + " cannot be parsed: " + why);
  }
  return options;
}

const char* ValueOf(const PQconninfoOption* options, std::string_view keyword) {
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (keyword == o->keyword) return o->val;
  }
  return nullptr;
}

}  // namespace

StatusOr<std::string> PreferStandbyConninfo(const std::string& standby_url, const std::string& primary_url) {
  StatusOr<ConninfoPtr> standby = ParseConninfo(standby_url, "standby.url");
  if (!standby.ok()) return standby.status();
  StatusOr<ConninfoPtr> primary = ParseConninfo(primary_url, "database_url");
  if (!primary.ok()) return primary.status();
  auto one_host = [](const PQconninfoOption* o, const char* key) -> Status {
    if (ValueOf(o, "hostaddr") != nullptr) return Status::Invalid(key, std::string(key) + " names hostaddr");
    for (const char* k : {"host", "port"}) {
      const char* v = ValueOf(o, k);
      if (v != nullptr && std::string_view(v).find(',') != std::string_view::npos) {
        return Status::Invalid(key, std::string(key) + " names more than one " + k);
      }
    }
    return Status::Ok();
  };
  if (Status st = one_host(standby->get(), "standby.url"); !st.ok()) return st;
  if (Status st = one_host(primary->get(), "database_url"); !st.ok()) return st;
  std::string out;
  for (const PQconninfoOption* o = standby->get(); o->keyword != nullptr; ++o) {
    const std::string_view keyword = o->keyword;
    const char* theirs = ValueOf(primary->get(), keyword);
    std::string val = o->val != nullptr ? o->val : "";
    if (keyword == "host" || keyword == "port") {
      // An empty entry means libpq's default, as it would for a single host.
      val += ",";
      val += theirs != nullptr ? theirs : "";
    } else if (keyword == "target_session_attrs") {
      val = "prefer-standby";
    } else {
      const std::string_view mine = o->val != nullptr ? o->val : "";
      if (mine != (theirs != nullptr ? std::string_view(theirs) : std::string_view())) {
        return Status::Invalid("standby.url", "standby.url and database_url differ in " + std::string(keyword) +
                                                  "; for standby.admin_reads they may differ only in host and port");
      }
      if (o->val == nullptr) continue;
    }
    if (!out.empty()) out.push_back(' ');
    out.append(keyword);
    out.push_back('=');
    AppendQuoted(&out, val.c_str());
  }
  return out;
}

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

std::string WithConnectTimeout(const std::string& database_url) {
  StatusOr<ConninfoPtr> options = ParseConninfo(database_url, "database_url");
  if (!options.ok()) return database_url;  // connecting reports libpq's own message
  const char* set = ValueOf(options->get(), "connect_timeout");
  if (set != nullptr && *set != '\0') return database_url;
  std::string out;
  for (const PQconninfoOption* o = options->get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    out.append(o->keyword);
    out.push_back('=');
    AppendQuoted(&out, o->val);
    out.push_back(' ');
  }
  out.append("connect_timeout='" + std::to_string(kDefaultConnectTimeoutS) + "'");
  return out;
}

std::string WithConninfoOverrides(const std::string& url,
                                  const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::string out;
  auto add = [&](const std::string& k, const char* v) {
    if (!out.empty()) out.push_back(' ');
    out += k + "=";
    AppendQuoted(&out, v);
  };
  StatusOr<ConninfoPtr> options = ParseConninfo(url, "url");
  if (options.ok()) {
    for (const PQconninfoOption* o = options->get(); o->keyword != nullptr; ++o) {
      bool overridden = false;
      for (const auto& [k, v] : overrides) overridden |= k == o->keyword;
      if (!overridden && o->val != nullptr) add(o->keyword, o->val);
    }
  }
  for (const auto& [k, v] : overrides) add(k, v.c_str());
  return out;
}

std::string ConninfoValue(const std::string& url, const std::string& keyword, const std::string& fallback) {
  StatusOr<ConninfoPtr> options = ParseConninfo(url, "url");
  if (!options.ok()) return fallback;
  const char* v = ValueOf(options->get(), keyword);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace belfry
