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

TEST(PreferStandbyConninfoTest, ListsTheStandbyFirstAndPrefersIt) {
  StatusOr<std::string> info = PreferStandbyConninfo("postgresql://u:pw@standby.example:5433/belfry?sslmode=require",
                                                     "postgresql://u:pw@primary.example:5432/belfry?sslmode=require");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  for (const char* part : {"host='standby.example,primary.example'", "port='5433,5432'", "user='u'", "password='pw'",
                           "dbname='belfry'", "sslmode='require'", "target_session_attrs='prefer-standby'"}) {
    EXPECT_NE(info->find(part), std::string::npos) << part << " in " << *info;
  }
}

TEST(PreferStandbyConninfoTest, RefusesUrlsThatDifferInMoreThanTheServer) {
  for (const auto& [standby, primary] : std::vector<std::pair<std::string, std::string>>{
           {"postgresql://u@s/belfry", "postgresql://v@p/belfry"},
           {"postgresql://u@s/one", "postgresql://u@p/two"},
           {"postgresql://u@s/b?sslmode=disable", "postgresql://u@p/b?sslmode=require"},
           {"postgresql://u@s1,s2/b", "postgresql://u@p/b"},
           {"hostaddr=10.0.0.1 dbname=b", "host=p dbname=b"},
           {"host=s dbname='unterminated", "host=p dbname=b"},
       }) {
    StatusOr<std::string> info = PreferStandbyConninfo(standby, primary);
    EXPECT_FALSE(info.ok()) << standby << " / " << primary;
    if (!info.ok()) EXPECT_EQ(info.status().code(), Status::Code::kInvalid);
  }
}

// libpq itself takes the string: with no standby listening, it connects to the primary.
TEST(PreferStandbyConninfoTest, ConnectsToThePrimaryWhenTheStandbyIsDown) {
  std::string error;
  auto db = PgTestDatabase::Create(&error);
  ASSERT_NE(db, nullptr) << error;
  StatusOr<std::string> primary = WithSessionSetting(db->url(), "application_name", "x");  // keyword=value form
  ASSERT_TRUE(primary.ok());
  // The standby: the same server's parameters, on a port where nothing listens.
  std::string standby = *primary;
  const size_t port = standby.find("port='");
  ASSERT_NE(port, std::string::npos) << standby;
  standby.replace(port, standby.find('\'', port + 6) - port + 1, "port='1'");
  StatusOr<std::string> info = PreferStandbyConninfo(standby, *primary);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  pqxx::connection conn(*info);
  pqxx::nontransaction txn(conn);
  EXPECT_FALSE(txn.exec1("SELECT pg_is_in_recovery()")[0].as<bool>());
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
