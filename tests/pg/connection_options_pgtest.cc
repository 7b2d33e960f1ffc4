#include "pg/connection_options.h"

#include <gtest/gtest.h>

#include <pqxx/connection>
#include <pqxx/nontransaction>

#include "pg/pg_test_database.h"

namespace belfry {
namespace {

TEST(WithSessionSettingTest, RewritesAUriAndKeepsEveryParameter) {
  StatusOr<std::string> url =
      WithSessionSetting("postgresql://u:p%27w@db.example:6543/belfry?sslmode=require&application_name=x",
                         "statement_timeout", "2000");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  for (const char* part : {"user='u'", R"(password='p\'w')", "host='db.example'", "port='6543'", "dbname='belfry'",
                           "sslmode='require'", "application_name='x'", "options='-c statement_timeout=2000'"}) {
    EXPECT_NE(url->find(part), std::string::npos) << part << " in " << *url;
  }
}

TEST(WithSessionSettingTest, AppendsToOptionsAlreadySet) {
  StatusOr<std::string> url = WithSessionSetting("host=h dbname=d options='-c work_mem=64MB'", "statement_timeout", "5");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_NE(url->find("options='-c work_mem=64MB -c statement_timeout=5'"), std::string::npos) << *url;
}

TEST(WithSessionSettingTest, RefusesWhatLibpqCannotParse) {
  for (const char* bad : {"host=h dbname='unterminated", "postgresql://h/x?nosuchparam=1", "host=h nosuchkey=1"}) {
    StatusOr<std::string> url = WithSessionSetting(bad, "statement_timeout", "5");
    EXPECT_FALSE(url.ok()) << bad;
    if (!url.ok()) EXPECT_EQ(url.status().code(), Status::Code::kInvalid);
  }
}

// A real server applies the setting to the session, and enforces it.
TEST(WithSessionSettingTest, TheServerEnforcesIt) {
  std::string error;
  auto db = PgTestDatabase::Create(&error);
  ASSERT_NE(db, nullptr) << error;
  StatusOr<std::string> url = WithSessionSetting(db->url(), "statement_timeout", "150");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  pqxx::connection conn(*url);
  pqxx::nontransaction txn(conn);
  EXPECT_EQ(txn.exec("SHOW statement_timeout")[0][0].as<std::string>(), "150ms");
  EXPECT_THROW(txn.exec("SELECT pg_sleep(2)"), pqxx::sql_error);
}

}  // namespace
}  // namespace belfry
