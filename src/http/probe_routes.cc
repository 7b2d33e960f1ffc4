// GET /healthz, /readyz and /metrics: answered from memory, without a database session.
#include <httplib.h>

#include <exception>
#include <string>
#include <vector>

#include "core/json_writer.h"
#include "http/admin_context.h"
#include "http/admin_responses.h"
#include "http/admin_routes.h"

namespace belfry {
namespace {

constexpr std::string_view kMetricsType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

void ServeHealthz(httplib::Response& res) { SendJsonText(res, 200, "{\"status\":\"ok\"}"); }

void ServeReadyz(AdminContext& ctx, httplib::Response& res) {
  Status st;
  if (ctx.deps.readiness) {
    try {
      st = ctx.deps.readiness();
    } catch (const std::exception& e) {
      st = Status::Retryable(std::string("readiness check threw: ") + e.what());
    }
  }
  std::string body = st.ok() ? "{\"status\":\"ready\"" : "{\"status\":\"not_ready\",\"error\":";
  if (!st.ok()) AppendJsonString(&body, st.ToString());
  // A warning, not a readiness failure: the node fires every other job.
  if (ctx.deps.unknown_zones) {
    const std::vector<std::string> zones = ctx.deps.unknown_zones();
    if (!zones.empty()) {
      body.append(",\"unknown_zones\":[");
      for (size_t i = 0; i < zones.size(); ++i) {
        if (i > 0) body.push_back(',');
        AppendJsonString(&body, zones[i]);
      }
      body.push_back(']');
    }
  }
  body.push_back('}');
  SendJsonText(res, st.ok() ? 200 : 503, std::move(body));
}

void ServeMetrics(AdminContext& ctx, httplib::Response& res) {
  res.set_content(ctx.deps.metrics->Serialize(), std::string(kMetricsType));
  res.status = 200;
}

}  // namespace belfry
