import CJack
import Foundation
import Glibc
import Synchronization
import Testing
import JackCommon
import JackTestSupport
@testable import JackDriver
@testable import QueueCore

/// A notification callback that blocks where a cancel cannot end it (cancellation off), until
/// the test lets it go: the client's close, which cancels and joins its notification thread,
/// then waits as libjack's does on the mutex its cancelled thread died holding (jack2 issue
/// #395), until the test lets go.
private struct Gate: ~Copyable {
    var open = sem_t()
    let entered = Atomic<Bool>(false)
}

private func blockingRegistration(_ name: UnsafePointer<CChar>?, _ registered: Int32, _ argument: UnsafeMutableRawPointer?) {
    guard let gate = argument?.assumingMemoryBound(to: Gate.self), !gate.pointee.entered.load(ordering: .acquiring) else { return }
    var previous: Int32 = 0
    pthread_setcancelstate(Int32(PTHREAD_CANCEL_DISABLE), &previous)
    gate.pointee.entered.store(true, ordering: .releasing)
    while sem_wait(&gate.pointee.open) != 0 {}
    pthread_setcancelstate(previous, &previous)
}

@Suite(.serialized) struct JackClientsTests {
    /// A close after the server went away that does not return within `abandonSeconds` is left
    /// to its thread: the caller goes on, a queue's open is refused at once with the reason
    /// (not a hang on libjack's open mutex), a close meanwhile is left at once, and once the
    /// stuck close returns, what it was to free is freed and clients open again.
    @Test func aCloseThatDoesNotReturnIsLeftToItsThreadAndOpensSaySoUntilItReturns() throws {
        let server = try JackServer()
        defer { server.stop() }
        try JackServer.withInProcessClients { try closeLeftBehind(on: server) }
    }

    private func closeLeftBehind(on server: JackServer) throws {
        let gate = UnsafeMutablePointer<Gate>.allocate(capacity: 1)
        gate.initialize(to: Gate())
        sem_init(&gate.pointee.open, 0, 0)
        // Let go after 8 s whatever happens, so that a close that waits (the bug) ends the test
        // with failures, not a hang.
        let letGo = Atomic<Bool>(false)
        let timer = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let gatePointer = gate
        let timerDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = timer.wait(timeout: .now() + 8)
            if !letGo.exchange(true, ordering: .relaxed) { sem_post(&gatePointer.pointee.open) }
            timerDone.signal()
        }
        func release() {
            if !letGo.exchange(true, ordering: .relaxed) { sem_post(&gate.pointee.open) }
            timer.signal()
        }

        var status = jack_status_t(0)
        let blocker = try #require(jaq_jack_client_open("jaq-close-blocked", JackNoStartServer, &status, server.name))
        jack_set_client_registration_callback(blocker, blockingRegistration, UnsafeMutableRawPointer(gate))
        #expect(jack_activate(blocker) == 0)
        // A client that joins: the server tells the blocker, whose notification thread then blocks.
        let other = try #require(jaq_jack_client_open("jaq-close-other", JackNoStartServer, &status, server.name))
        let deadline = Date().addingTimeInterval(10)
        while !gate.pointee.entered.load(ordering: .acquiring) && Date() < deadline { usleep(1000) }
        let entered = gate.pointee.entered.load(ordering: .acquiring)
        try #require(entered, "the blocker's callback never ran")

        let freed = Atomic<Bool>(false)
        var start = Date()
        let closed = JackClients.close(blocker, serverGone: true) { freed.store(true, ordering: .releasing) }
        let took = Date().timeIntervalSince(start)
        #expect(!closed, "the close returned, after \(took) s")
        #expect(took >= JackClients.abandonSeconds - 0.1 && took < JackClients.abandonSeconds + 2, "\(took) s")
        let freedEarly = freed.load(ordering: .acquiring)
        #expect(!freedEarly, "freed before the close returned")
        let reason = try #require(JackClients.stuckReason)
        #expect(reason.contains("jack2 issue #395"), "\(reason)")

        // A queue's open is refused at once, with the reason.
        start = Date()
        let error = #expect(throws: QueueError.self) {
            _ = try OutputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 16),
                                      provider: JackDriver(serverName: server.name), clientName: "jaq-close-queue",
                                      executor: .queueThread) { _ in }
        }
        #expect(error == .invalidDevice(reason), "\(String(describing: error))")
        #expect(Date().timeIntervalSince(start) < 1)
        // Another close is left to its thread at once (it would wait on the stuck one).
        start = Date()
        #expect(!JackClients.close(other, serverGone: false))
        #expect(Date().timeIntervalSince(start) < 0.5)

        // Let the blocked notification go: both closes return, and libjack is usable again.
        release()
        let until = Date().addingTimeInterval(15)
        while JackClients.stuckReason != nil && Date() < until { usleep(10_000) }
        #expect(JackClients.stuckReason == nil, "the closes never returned")
        let freedLater = freed.load(ordering: .acquiring)
        #expect(freedLater, "what the close was to free was not freed")
        let again = try #require(jaq_jack_client_open("jaq-close-again", JackNoStartServer, &status, server.name))
        #expect(JackClients.close(again, serverGone: false))
        timerDone.wait()
        sem_destroy(&gate.pointee.open)
        gate.deinitialize(count: 1)
        gate.deallocate()
    }
}
