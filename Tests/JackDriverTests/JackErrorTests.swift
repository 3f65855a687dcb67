import Testing
import CJack
import JackCommon

/// `jack_status_t` bits in words: what a user reads when jaq cannot open a JACK client.
@Suite struct JackErrorTests {
    @Test func noServerIsServerNotRunning() {
        let error = JackError(jack_status_t(JackFailure.rawValue | JackServerFailed.rawValue))
        #expect(error.description == "server not running")
        #expect(error.serverNotRunning)
    }

    @Test func everyBitHasItsWords() {
        let expected: [(jack_status_t, String)] = [
            (JackInvalidOption, "invalid option"), (JackNameNotUnique, "name not unique"),
            (JackServerStarted, "server started"), (JackServerFailed, "server not running"),
            (JackServerError, "server error"), (JackNoSuchClient, "no such client"),
            (JackLoadFailure, "load failure"), (JackInitFailure, "init failure"),
            (JackShmFailure, "shared memory failure"), (JackVersionError, "version mismatch"),
            (JackBackendError, "backend error"), (JackClientZombie, "client zombie"),
        ]
        for (bit, words) in expected {
            #expect(JackError(bit).description == words)
            // libjack sets JackFailure with every failure bit; "server started" is no failure.
            guard bit != JackServerStarted else { continue }
            #expect(JackError(jack_status_t(JackFailure.rawValue | bit.rawValue)).description == words)
        }
    }

    @Test func severalBitsAreAllNamed() {
        let status = JackFailure.rawValue | JackServerError.rawValue | JackShmFailure.rawValue | JackVersionError.rawValue
        #expect(JackError(jack_status_t(status)).description == "server error, version mismatch, shared memory failure")
    }

    @Test func bareFailureIsOperationFailed() {
        #expect(JackError(JackFailure).description == "operation failed")
        #expect(JackError(jack_status_t(JackFailure.rawValue | JackServerStarted.rawValue)).description
                == "server started, operation failed")
        #expect(JackError(status: 0).description == "no error")
    }

    @Test func unknownBitsAreShownAsNumbers() {
        #expect(JackError(status: 0x10 | 0x8000).description == "server not running, status bits 0x8000")
    }
}
