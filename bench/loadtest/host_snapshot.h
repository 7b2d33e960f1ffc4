// HostSnapshot: what the benchmark summaries record about the machine they ran on, so that a
// number is never separated from its conditions (the machine is shared, so the load average
// matters).
#pragma once

#include <nlohmann/json.hpp>

namespace belfry::loadtest {

// {"nproc","cpu","mem_gb","loadavg":[1m,5m,15m]}.
nlohmann::ordered_json HostSnapshot();

}  // namespace belfry::loadtest
