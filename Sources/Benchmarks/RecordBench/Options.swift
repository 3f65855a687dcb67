// jaq-bench's command-line options.

struct Options {
    var seconds = 60.0
    var channels = [2, 16, 64]
    var output = "Docs/benchmarks.md"
    var period = 256
    /// The seconds are recorded in this many rounds, the tools taking turns in each round, so
    /// that a slow minute of a shared machine falls on every tool alike.
    var rounds = 3
    /// nil: realtime scheduling when this process may use it (`--realtime` / `--no-realtime`).
    var realtime: Bool?
    /// Channels of the 16-bit WAV `jaq play` and `sndfile-jackplay` play (0: no playback runs).
    var playChannels = 64
    /// Takes of 64 tracks recorded on a non-realtime server to count xruns (0: none).
    var xrunTakes = 10

    init(_ arguments: [String]) {
        var i = 1
        while i < arguments.count {
            let value = i + 1 < arguments.count ? arguments[i + 1] : ""
            switch arguments[i] {
            case "--seconds": seconds = Double(value) ?? seconds; i += 1
            case "--channels": channels = value.split(separator: ",").compactMap { Int($0) }; i += 1
            case "--output": output = value; i += 1
            case "--period": period = Int(value) ?? period; i += 1
            case "--rounds": rounds = max(1, Int(value) ?? rounds); i += 1
            case "--play-channels": playChannels = Int(value) ?? playChannels; i += 1
            case "--xrun-takes": xrunTakes = Int(value) ?? xrunTakes; i += 1
            case "--realtime": realtime = true
            case "--no-realtime": realtime = false
            default: break
            }
            i += 1
        }
    }
}
