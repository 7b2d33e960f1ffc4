// MessageDump: every record the integration tests consume from belfry's topics, appended to the
// file named by $BELFRY_MESSAGE_DUMP (nothing when it is unset), one JSON object per line:
//   {"kind":"trigger"|"","topic":..,"key":<base64>|null,"value":<base64>|null,"headers":{name:<base64>}}
// so that tests/contract/message_contracts_test.py --dump can check each against its schema
// (docs/contracts.md). `kind` is "trigger" when the caller knows it reads triggers; otherwise the
// checker tells the kind from the topic's name (ItestWorld's ".results", ".changes", ".dlq", ...).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace belfry {

// Thread-safe; a failure to write is reported once on stderr and does not fail the test.
void DumpConsumedRecord(std::string_view kind, std::string_view topic, const std::optional<std::string>& key,
                        const std::optional<std::string>& value, const std::map<std::string, std::string>& headers);

}  // namespace belfry
