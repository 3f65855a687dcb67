// jaq-bench's command-line options.

import Foundation

let usage = """
    usage: jaq-bench [--seconds S] [--channels 2,16,64] [--rounds N] [--period FRAMES]
                     [--play-channels N] [--xrun-takes N] [--realtime | --no-realtime] [--output FILE]
    Records a ramp with jaq record, jack_capture and floor-record in turns on a private dummy
    JACK server, plays a file with jaq play, sndfile-jackplay and floor-play, and writes the
    tables to FILE (default Docs/benchmarks.md). --play-channels 0 and --xrun-takes 0 skip
    the playback and the non-realtime takes.
    """

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
            case "-h", "--help": print(usage); exit(0)
            default:
                FileHandle.standardError.write(Data("jaq-bench: unknown option \(arguments[i])\n\(usage)\n".utf8))
                exit(64)
            }
            i += 1
        }
    }
}
