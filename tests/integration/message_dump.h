// MessageDump: every record the integration tests consume from belfry's topics, and every record
// they produce (PlainProducer), appended to the file named by $BELFRY_MESSAGE_DUMP (nothing when it
// is unset), one JSON object per line:
//   {"kind":"trigger"|"produced"|"","topic":..,["partition":..,"offset":..,]"key":<base64>|null,
//    "value":<base64>|null,"headers":{name:<base64>}}
// so that tests/contract/message_contracts_test.py --dump can check each against its schema
// (docs/contracts.md). `kind` is "trigger" when the caller knows it reads triggers; otherwise the
// checker tells the kind from the topic's name (ItestWorld's ".results", ".changes", ".dlq", ...).
// A produced record carries its partition and offset, by which the checker finds belfry's verdict
// on it (the command's outcome, or a report's DLQ record) and judges it by that verdict.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace belfry {

// Thread-safe; a failure to write is reported once on stderr and does not fail the test.
void DumpConsumedRecord(std::string_view kind, std::string_view topic, const std::optional<std::string>& key,
                        const std::optional<std::string>& value, const std::map<std::string, std::string>& headers);

// A record a test produced and the broker acknowledged at (partition, offset).
void DumpProducedRecord(std::string_view topic, int32_t partition, int64_t offset,
                        const std::optional<std::string>& key, const std::optional<std::string>& value,
                        const std::vector<std::pair<std::string, std::string>>& headers);

}  // namespace belfry
