import Foundation
import Telemetry
import Testing

@testable import RemoteBackend

/// What the dispatcher tells `onChange` (the upstream gauges): in the order the changes happened,
/// and before anyone reading `upstreams` can see a change.
@Suite struct UpstreamDispatcherTests {
    /// Two threads enter generations at once while a third reads `upstreams`: every call to
    /// `onChange` carries one more running generation than the call before (none out of order,
    /// none lost), and what the reader sees has always been told already.
    @Test func changesAreToldInOrderAndBeforeTheyShow() async throws {
        let total = 20_000
        let dispatcher = UpstreamDispatcher(
            scheduler: UpstreamScheduler(upstreams: [(1, total)], maxQueue: 0))
        let told = Locked<[Int]>([])
        dispatcher.onChange = { upstreams in told.withLock { $0.append(upstreams[0].active) } }

        let behind = Locked(0)
        let done = Locked(false)
        let reader = Thread {
            while !done.withLock({ $0 }) {
                let shown = dispatcher.upstreams[0].active
                if (told.withLock { $0.last ?? 0 }) < shown { behind.withLock { $0 += 1 } }
            }
        }
        reader.start()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<total / 2 {
                        _ = try? dispatcher.enter(priority: .interactive, deadline: nil, onEvent: { _ in })
                    }
                }
            }
        }
        done.withLock { $0 = true }

        let calls = told.withLock { $0 }
        #expect(calls.count == total)
        let outOfOrder = zip(calls, 1...total).filter { $0 != $1 }.count
        #expect(outOfOrder == 0, "onChange was told \(outOfOrder) counts out of order")
        #expect(behind.withLock { $0 } == 0, "a reader saw running generations before onChange was told")
    }
}
