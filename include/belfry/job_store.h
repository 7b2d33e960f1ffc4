// JobStore: where jobs live, as one database implements it: every role interface at once.
// Callers take the role they need, never this (docs/architecture.md, "Role interfaces"):
//   TriggerPathStore   the tick query, and a refused trigger's record   (trigger_path_store.h)
//   CommandStore       the command path's writes                        (command_store.h)
//   BulkOpStore        walking bulk operations                          (bulk_op_store.h)
//   JobChangeStore     publishing and sweeping the audit trail          (job_change_store.h)
//   JobReader          the admin API's and the CLI's reads              (job_reader.h)
//   LoadReader         the load projection's and rebalance's full reads (load_reader.h)
// Implemented by PgJobStore (src/pg) and, in unit tests, FakeJobStore (tests/fakes).
#pragma once

#include "belfry/bulk_op_store.h"
#include "belfry/command_store.h"
#include "belfry/job_change_store.h"
#include "belfry/job_reader.h"
#include "belfry/load_reader.h"
#include "belfry/trigger_path_store.h"

namespace belfry {

class JobStore : public TriggerPathStore,
                 public CommandStore,
                 public BulkOpStore,
                 public JobChangeStore,
                 public JobReader,
                 public LoadReader {};

}  // namespace belfry
