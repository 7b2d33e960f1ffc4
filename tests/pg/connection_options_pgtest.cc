#include "pg/connection_options.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include <pqxx/connection>
#include <pqxx/nontransaction>

#include "pg/pg_session.h"
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
    if (!url.ok()) {
      EXPECT_EQ(url.status().code(), Status::Code::kInvalid);
    }
  }
}

TEST(WithConnectTimeoutTest, AddsFiveSecondsUnlessTheUrlSetsIt) {
  const std::string with = WithConnectTimeout("postgresql://u@db.example:6543/belfry?sslmode=require");
  for (const char* part : {"user='u'", "host='db.example'", "port='6543'", "dbname='belfry'", "sslmode='require'",
                           "connect_timeout='5'"}) {
    EXPECT_NE(with.find(part), std::string::npos) << part << " in " << with;
  }
  for (const char* kept : {"postgresql://u@h/d?connect_timeout=10", "host=h connect_timeout=3",
                           "host=h dbname='unterminated"}) {
    EXPECT_EQ(WithConnectTimeout(kept), kept);
  }
}

// A listening socket that never accepts: the TCP handshake completes (the kernel does it), and the
// startup packet is never answered, as with a hung or blackholed server. Without connect_timeout
// libpq waited for ever, and so did every /readyz and /metrics scrape.
TEST(WithConnectTimeoutTest, ConnectingToASilentServerEndsWithinTheTimeout) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 16), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string url = "postgresql://belfry@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/belfry";
  PgSession session(url, {});
  const auto start = std::chrono::steady_clock::now();
  std::future<Status> attempt = std::async(std::launch::async, [&] {
    return session.Run("probe", [](pqxx::connection&) { return Status::Ok(); });
  });
  const bool ended = attempt.wait_for(std::chrono::seconds(9)) == std::future_status::ready;
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(listener);  // ends a hanging attempt (its queued connection is reset)
  const Status st = attempt.get();
  EXPECT_TRUE(ended) << "the connection attempt did not end within 9 s";
  EXPECT_TRUE(st.retryable()) << st.ToString();
  EXPECT_GE(took, std::chrono::milliseconds(4500));
  EXPECT_LT(took, std::chrono::milliseconds(7000));
}

TEST(WithConnectTimeoutTest, AClosedPortFailsAtOnce) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(s);  // the port is free again, and nothing listens on it
  PgSession session("postgresql://belfry@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/belfry", {});
  const auto start = std::chrono::steady_clock::now();
  const Status st = session.Run("probe", [](pqxx::connection&) { return Status::Ok(); });
  EXPECT_TRUE(st.retryable()) << st.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
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
    if (!info.ok()) {
      EXPECT_EQ(info.status().code(), Status::Code::kInvalid);
    }
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
