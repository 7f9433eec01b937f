import Sessions
import TestSupport
import Testing

/// The per-key stored-response quota over PostgreSQL's store (its own owner-scoped eviction and
/// counts). Its name ends in `PostgresServerTests`, so `make test` runs it in its PostgreSQL pass.
@Suite(.serialized, .enabled(if: TestPostgres.enabled, "needs PostgreSQL: make postgres-test"))
struct TenantQuotaPostgresServerTests {
    @Test func oneKeyFillingItsQuotaNeverEvictsAnotherKeysResponses() async throws {
        let store = try PostgresResponseStore.open(url: try TestPostgres.freshDatabase(), password: nil, replica: "q")
        try await TenantQuotaEndToEndTests().oneKeyFillingItsQuotaNeverEvictsAnotherKeysResponses(store: store)
    }
}
