import Dispatch
import Glibc

/// SIGINT, SIGTERM and SIGHUP as a flag the main loop polls: the handlers run on a
/// dispatch queue, never in signal context, and never touch audio.
final class Interruption: @unchecked Sendable {
    private let signalled = SharedFlag()
    private var sources: [DispatchSourceSignal] = []

    init() {
        // A file size limit makes writes fail with EFBIG (reported) instead of killing jaq.
        Glibc.signal(SIGXFSZ, SIG_IGN)
        for number in [SIGINT, SIGTERM, SIGHUP] {
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [signalled] in signalled.setOnce(number) }
            source.resume()
            sources.append(source)
        }
    }

    /// The signal received, if any.
    var signal: Int32? {
        let value = signalled.value
        return value == 0 ? nil : value
    }

    /// The conventional exit status for a signal: 128 + its number.
    static func exitStatus(_ number: Int32) -> Int32 { 128 + number }
}
