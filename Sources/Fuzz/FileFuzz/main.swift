import AudioToolbox
import Foundation
import Glibc

// FileFuzz: hostile input for Audio File Services, run in a process of its own so that a
// crash is one failed run, not a dead test runner. Docs/audiofile.md ("Hostile input").
//
//   FileFuzz walk [--write] FILE...     walk each file (FileWalk), one line of results each
//   FileFuzz fuzz --seed S --iterations N [--start I] [--corpus DIR]... --crashes DIR
//                                       mutate seed files (written here with jaq's own
//                                       AudioFile writer, plus every file of each corpus) and
//                                       walk each mutant; a signal or a hang saves the mutant
//                                       as DIR/crash-S-I.bin (hang-S-I.bin) and names it
//   FileFuzz stream --seed S --iterations N [--start I] [--corpus DIR]... --crashes DIR
//                                       the same mutants parsed by AudioFileStream in random
//                                       pieces, with discontinuities and seeks (StreamFuzz)
//   FileFuzz nonfinite DIR              NaN and ±inf samples written to MP3, Ogg Vorbis, Opus
//   FileFuzz formats DIR                hostile ASBDs to AudioQueueNewOutput/NewInput and
//                                       AudioFileCreateWithURL
//   FileFuzz queue                      hostile times, parameters and property sizes on an
//                                       output queue (needs a JACK server)
//   FileFuzz descriptions --seed S --iterations N DIR
//                                       hostile packet descriptions enqueued on AAC and MP3
//                                       output queues (ManualDriver, no server); exits 1 when
//                                       a result is not the one the reference calls for

var arguments = Array(CommandLine.arguments.dropFirst())

func usage() -> Never {
    FileHandle.standardError.write(Data(("usage: FileFuzz walk [--write] FILE... | fuzz --seed S --iterations N [--start I]"
        + " [--corpus DIR]... --crashes DIR | stream (as fuzz) | nonfinite DIR | formats DIR | queue | descriptions --seed S --iterations N DIR\n").utf8))
    exit(2)
}

/// The value after `name` in the arguments, removed from them.
func option(_ name: String, in arguments: inout [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    let value = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
    return value
}

/// The options of `fuzz` and `stream`: --seed, --iterations, --start, --corpus (repeated), --crashes.
func mutantRun(_ arguments: inout [String]) -> (seed: UInt64, iterations: Int, start: Int, corpora: [String], crashes: String) {
    var corpora: [String] = []
    while let corpus = option("--corpus", in: &arguments) { corpora.append(corpus) }
    guard let seed = option("--seed", in: &arguments).flatMap(UInt64.init), let iterations = option("--iterations", in: &arguments).flatMap(Int.init),
          let crashes = option("--crashes", in: &arguments)
    else { usage() }
    return (seed, iterations, option("--start", in: &arguments).flatMap(Int.init) ?? 0, corpora, crashes)
}

guard let mode = arguments.first else { usage() }
arguments.removeFirst()

switch mode {
case "walk":
    let writes = arguments.contains("--write")
    for path in arguments where path != "--write" {
        var walk = FileWalk()
        walk.walk(path, writes: writes)
        print("\((path as NSString).lastPathComponent): \(walk.line)")
        fflush(nil)  // what was printed survives a crash on the next file
    }
case "fuzz":
    let run = mutantRun(&arguments)
    let fuzzer = try Fuzzer(seed: run.seed, crashDirectory: run.crashes, corpora: run.corpora)
    fuzzer.run(from: run.start, count: run.iterations)
case "stream":
    let run = mutantRun(&arguments)
    if try !StreamFuzz.run(seed: run.seed, from: run.start, count: run.iterations, crashDirectory: run.crashes, corpora: run.corpora) {
        fflush(nil)
        exit(1)
    }
case "nonfinite":
    guard let directory = arguments.first else { usage() }
    NonFiniteSamples.run(in: directory)
case "formats":
    guard let directory = arguments.first else { usage() }
    HostileFormats.run(in: directory)
case "queue":
    HostileQueueCalls.run()
case "descriptions":
    guard let seed = option("--seed", in: &arguments).flatMap(UInt64.init), let iterations = option("--iterations", in: &arguments).flatMap(Int.init),
          let directory = arguments.first
    else { usage() }
    if !HostileDescriptions.run(seed: seed, iterations: iterations, directory: directory) {
        fflush(nil)
        exit(1)
    }
default:
    usage()
}
fflush(nil)  // before LeakSanitizer's exit under make asan, which skips stdio's
