import Testing
import Foundation
import AudioToolbox
import JackDriver
import JackTestSupport
import QueueCore

/// The API walk (AudioQueueAPIWalk) on the ManualDriver and on a private jackd.
///
/// `make test` makes 10^4 calls on the ManualDriver and 2·10^3 on JACK; `make fuzz-api`
/// 10^5 and 10^4 (JAQ_API_WALK_CALLS, JAQ_API_WALK_JACK_CALLS). JAQ_API_WALK_SEED replays a seed.
@Suite(.serialized) struct AudioQueueAPIWalkTests {
    static func setting(_ name: String, _ fallback: UInt64) -> UInt64 {
        ProcessInfo.processInfo.environment[name].flatMap { UInt64($0) } ?? fallback
    }

    static let seed = setting("JAQ_API_WALK_SEED", 0x15A9_1D0C)

    @Test func aRandomWalkOfCallsOnTheManualDriverGetsOnlyTheResultCodesAppleDocuments() {
        let calls = Int(Self.setting("JAQ_API_WALK_CALLS", 10_000))
        let driver = ManualDriver(periodFrames: 256)
        driver.allowsWaiting = false  // as on a realtime server: a cycle never waits
        let started = Date()
        let walk = AudioQueueAPIWalk(seed: Self.seed, driver: driver, device: driver)
        let violations = walk.run(calls: calls)
        #expect(violations.isEmpty, "\(walk.report(violations))")
        print("API walk: \(walk.log.count) calls, seed \(Self.seed), \(String(format: "%.1f", Date().timeIntervalSince(started))) s, "
              + "\(walk.model.withLock { $0.callbacks }) callbacks, results \(walk.results.sorted { $0.key < $1.key })")
        if ProcessInfo.processInfo.environment["JAQ_API_WALK_LOG"] != nil { print(walk.log.joined(separator: "\n")) }
    }

    @Test func aRandomWalkOfCallsOnAPrivateJackServerGetsOnlyTheResultCodesAppleDocuments() throws {
        let calls = Int(Self.setting("JAQ_API_WALK_JACK_CALLS", 2_000))
        let server = try JackServer()
        defer { server.stop() }
        let started = Date()
        let walk = AudioQueueAPIWalk(seed: Self.seed &+ 1, driver: nil, device: JackDriver(serverName: server.name))
        let violations = JackServer.withInProcessClients { walk.run(calls: calls) }
        #expect(violations.isEmpty, "\(walk.report(violations))")
        print("API walk on JACK: \(walk.log.count) calls, seed \(Self.seed &+ 1), \(String(format: "%.1f", Date().timeIntervalSince(started))) s, "
              + "\(walk.model.withLock { $0.callbacks }) callbacks, results \(walk.results.sorted { $0.key < $1.key })")
    }
}
