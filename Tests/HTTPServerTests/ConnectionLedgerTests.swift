import Foundation
import TestSupport
import Testing

@testable import HTTPServer

@Suite("Connection deadlines and reserve (no I/O)")
struct ConnectionLedgerTests {
    let limits = ConnectionLedger.Limits(
        headerTimeout: .seconds(10), bodyTimeout: .seconds(30), idleAllowance: .seconds(30), untrustedPlaces: 3)

    @Test func aHeadNotInByItsDeadlineIsClosedWhateverArrivesMeanwhile() {
        let clock = ManualTimeSource()
        var l = ConnectionLedger(limits: limits)
        #expect(l.opened(1, now: clock.now).isEmpty)
        #expect(l.nextDeadline == clock.now + .seconds(10))
        // Bytes trickling in are not events here: nothing moves the deadline.
        clock.advance(by: .milliseconds(9999))
        #expect(l.expire(now: clock.now).isEmpty)
        clock.advance(by: .milliseconds(1))
        #expect(l.expire(now: clock.now) == [.close(1, .headerTimeout)])
        // Asked once: the next sweep does not close it again, and it no longer has a deadline.
        #expect(l.expire(now: clock.now + .seconds(60)).isEmpty)
        #expect(l.nextDeadline == nil)
        l.closed(1)
        #expect(l.entries.isEmpty)
    }

    @Test func theBodyHasItsOwnDeadlineFromTheHeadAndServingHasNone() {
        let clock = ManualTimeSource()
        var l = ConnectionLedger(limits: limits)
        _ = l.opened(1, now: clock.now)
        _ = l.opened(2, now: clock.now)
        clock.advance(by: .seconds(9))
        l.headReceived(1, trusted: true, now: clock.now)
        l.headReceived(2, trusted: false, now: clock.now)
        l.serving(2)
        clock.advance(by: .seconds(29))
        #expect(l.expire(now: clock.now).isEmpty)
        clock.advance(by: .seconds(1))
        #expect(l.expire(now: clock.now) == [.close(1, .bodyTimeout)])
        // A request being served is never timed out here, however long it takes.
        #expect(l.expire(now: clock.now + .seconds(3600)).isEmpty)
    }

    @Test func aKeptAliveConnectionGetsTheIdleAllowancePlusTheHeaderTime() {
        let clock = ManualTimeSource()
        var l = ConnectionLedger(limits: limits)
        _ = l.opened(1, now: clock.now)
        l.headReceived(1, trusted: false, now: clock.now)
        l.serving(1)
        clock.advance(by: .seconds(100))
        l.requestCompleted(1, now: clock.now)
        clock.advance(by: .seconds(39))
        #expect(l.expire(now: clock.now).isEmpty)
        clock.advance(by: .seconds(1))
        #expect(l.expire(now: clock.now) == [.close(1, .headerTimeout)])
    }

    @Test func pastTheUntrustedPlacesTheOldestUntrustedReceivingIsClosed() {
        let clock = ManualTimeSource()
        var l = ConnectionLedger(limits: limits)
        for id in 1...3 { #expect(l.opened(UInt64(id), now: clock.now).isEmpty) }
        // A trusted connection (even one sending its body) and one being served hold no untrusted place.
        l.headReceived(1, trusted: true, now: clock.now)
        l.headReceived(2, trusted: false, now: clock.now)
        l.serving(2)
        #expect(l.untrustedReceiving == 1)
        #expect(l.opened(4, now: clock.now).isEmpty)
        #expect(l.opened(5, now: clock.now).isEmpty)
        #expect(l.untrustedReceiving == 3)
        #expect(l.opened(6, now: clock.now) == [.close(3, .reserve)])
        #expect(l.opened(7, now: clock.now) == [.close(4, .reserve)])
        // Trust is kept across requests on the same connection.
        l.requestCompleted(1, now: clock.now)
        #expect(l.opened(8, now: clock.now) == [.close(5, .reserve)])
        #expect(l.untrustedReceiving == 3)
        // Closing connections neither count nor get closed twice.
        #expect(l.expire(now: clock.now).isEmpty)
    }

    @Test func withOnePlaceTheNewcomerOutlivesTheOldOne() {
        let clock = ManualTimeSource()
        var l = ConnectionLedger(
            limits: .init(
                headerTimeout: .seconds(1), bodyTimeout: .seconds(1), idleAllowance: .zero, untrustedPlaces: 1))
        _ = l.opened(1, now: clock.now)
        #expect(l.opened(2, now: clock.now) == [.close(1, .reserve)])
    }

    @Test func headChecksNameTheHeader() {
        func problem(_ headers: [(String, String)], version: String = "HTTP/1.1", dropped: Int = -1) -> HTTPError? {
            HTTPServer.headProblem(version: version, headers: headers, droppedAfter: dropped)
        }
        #expect(problem([("Host", "x")]) == nil)
        #expect(problem([], version: "HTTP/1.0") == nil)
        #expect(problem([])?.param == "Host")
        #expect(
            problem([("Host", "x"), ("authorization", "Bearer a"), ("Authorization", "Bearer b")])?.param
                == "Authorization")
        #expect(
            problem([("Host", "x"), ("Content-Length", "3"), ("Transfer-Encoding", "chunked")])?.message
                .contains("RFC 9112") == true)
        #expect(problem([("Host", "x"), ("Transfer-Encoding", "gzip, chunked")])?.param == "Transfer-Encoding")
        #expect(problem([("Host", "x"), ("Transfer-Encoding", "Chunked")]) == nil)
        #expect(problem([("Host", "x"), ("X-A", "a\tb")]) == nil)
        let nul = problem([("Host", "x"), ("Authorization", "Bearer k\u{0}junk")])
        #expect(nul?.status == 400 && nul?.param == "Authorization" && nul?.message.contains("0x0") == true)
        #expect(problem([("Host", "x"), ("X-A", "\u{7F}")])?.param == "X-A")
        #expect(problem([("Host", "x"), ("Authorization", "Bearer k")], dropped: 1)?.param == "Authorization")
    }
}
