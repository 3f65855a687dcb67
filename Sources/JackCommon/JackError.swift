import CJack

/// Why libjack refused or dropped a client: the `jack_status_t` bits of `jack_client_open`
/// (or of a shutdown callback) in words, as `/usr/include/jack/types.h` documents them.
///
/// `description` lists every bit that is set, most telling first, e.g. "server not running"
/// for `JackFailure | JackServerFailed`. `JackFailure` ("overall operation failed") is named
/// only when no other bit says why.
public struct JackError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The `jack_status_t` bits, OR-ed as libjack returns them.
    public let status: UInt32

    public init(status: UInt32) { self.status = status }

    /// Decodes the status libjack wrote through `jack_client_open`'s `status` argument.
    public init(_ status: jack_status_t) { self.status = UInt32(status.rawValue) }

    /// Each bit's words, in the order they are listed.
    static let words: [(bit: UInt32, text: String)] = [
        (UInt32(JackServerFailed.rawValue), "server not running"),    // unable to connect to the server
        (UInt32(JackServerError.rawValue), "server error"),           // communication error with the server
        (UInt32(JackVersionError.rawValue), "version mismatch"),      // client's protocol version differs
        (UInt32(JackShmFailure.rawValue), "shared memory failure"),   // unable to access shared memory
        (UInt32(JackInitFailure.rawValue), "init failure"),           // unable to initialize the client
        (UInt32(JackNameNotUnique.rawValue), "name not unique"),      // fatal with JackUseExactName, else renamed
        (UInt32(JackInvalidOption.rawValue), "invalid option"),       // invalid or unsupported option
        (UInt32(JackBackendError.rawValue), "backend error"),
        (UInt32(JackClientZombie.rawValue), "client zombie"),         // the client was zombified
        (UInt32(JackNoSuchClient.rawValue), "no such client"),        // requested client does not exist
        (UInt32(JackLoadFailure.rawValue), "load failure"),           // unable to load an internal client
        (UInt32(JackServerStarted.rawValue), "server started"),       // not a failure: the open started jackd
    ]

    /// The words of every bit set; `JackFailure` only when no other failure bit explains it.
    public var reasons: [String] {
        var reasons = Self.words.filter { status & $0.bit != 0 }.map(\.text)
        let failure = UInt32(JackFailure.rawValue)
        let known = Self.words.reduce(failure) { $0 | $1.bit }
        if status & ~known != 0 { reasons.append("status bits 0x\(String(status & ~known, radix: 16))") }
        let started = UInt32(JackServerStarted.rawValue)
        if status & failure != 0 && status & ~(failure | started) == 0 { reasons.append("operation failed") }
        return reasons.isEmpty ? ["no error"] : reasons
    }

    /// Whether the bits say no server was there to connect to (`JackServerFailed`).
    public var serverNotRunning: Bool { status & UInt32(JackServerFailed.rawValue) != 0 }

    public var description: String { reasons.joined(separator: ", ") }
}
