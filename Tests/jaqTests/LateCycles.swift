import Testing
import JackTestSupport

/// Runs `checks` (bit-exactness of a take), and when the server logged xruns while they ran
/// (a loaded machine ran a client's cycle late: jackd dropped or repeated that client's period),
/// records their failures as a known issue naming the xruns instead of failing. On a machine
/// that runs every cycle in time, the checks fail as usual.
func exactUnlessCyclesRanLate(_ server: JackServer, _ context: @autoclosure () -> String = "",
                              _ checks: () throws -> Void) rethrows {
    let xruns = server.xrunCount
    try withKnownIssue(Comment(rawValue: "the server logged \(xruns) xruns (a loaded machine) \(context())"),
                       isIntermittent: true) {
        try checks()
    } when: { xruns > 0 }
}
