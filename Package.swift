// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "jaq",
    products: [
        // Swift clients `import AudioToolbox`; C clients link libAudioToolbox.so.
        .library(name: "AudioToolbox", type: .dynamic, targets: ["AudioToolbox"]),
        .executable(name: "jaq", targets: ["jaq"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // C libraries of the system.
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        // libsoxr's declarations only: CSoxrLoad defines the functions jaq calls and opens the
        // library (dlopen) when the first resampler is made, so that a process that never
        // resamples does not load it, nor the OpenMP runtime it links (issue #29).
        .systemLibrary(name: "CSoxr", providers: [.apt(["libsoxr-dev"])]),
        .target(name: "CSoxrLoad"),
        // Rubber Band's declarations only: CRubberBandLoad defines the functions jaq calls and
        // opens the library (dlopen) when the first stretcher is made, so that nothing links the
        // GPL library and an installation without it still runs (Varispeed works, Spectral and
        // TimeDomain are refused).
        .systemLibrary(name: "CRubberBand", providers: [.apt(["librubberband-dev"])]),
        .target(name: "CRubberBandLoad"),
        // FFmpeg: libavcodec (codecs), libavformat (containers), libavutil. Headers only:
        // Sources/CFFmpeg/shim.h spells the error macros Swift cannot import; CFFmpegLoad
        // defines the functions jaq calls and opens FFmpeg (dlopen) on the first call, so that
        // the processes that never decode a compressed file do not load its ~130 libraries.
        .systemLibrary(name: "CFFmpeg",
                       providers: [.apt(["libavcodec-dev", "libavformat-dev", "libavutil-dev"])]),
        .target(name: "CFFmpegLoad"),

        // The Apple-compatible C API: headers, layout checks, CoreFoundation forwarders. The
        // real CoreFoundation (libFoundation.so, with ICU) is opened when first called, not
        // linked: a process that never calls it does not pay its start-up (CoreFoundationLoad.c).
        .target(name: "CAudioToolbox"),

        // The queue engine: no JACK here. Rings, realtime kernels, conversion, ManualDriver.
        // The realtime kernels are `@_noLocks` in release builds (JAQ_CHECK_NOLOCKS): the
        // checker needs every callee's body and specialized generics, which only a
        // whole-module optimized build gives (`swift build -c release`, which make test and
        // CI run). Debug builds leave the attribute out rather than pass SwiftPM an unsafe
        // -wmo flag, which would keep other packages from depending on jaq by version.
        .target(name: "QueueCore", dependencies: ["Sync", "CQueueCore", "CSoxr", "CSoxrLoad", "CRubberBand", "CRubberBandLoad"],
                swiftSettings: [.define("JAQ_CHECK_NOLOCKS", .when(configuration: .release))]),
        // libc functions Swift's Glibc module does not declare (sem_clockwait).
        .target(name: "CQueueCore"),
        // The one lock, semaphore, deadline and monotonic clock of every thread that may wait
        // (the queue's, the CLI's main loop and writer); QueueCore re-exports it.
        .target(name: "Sync", dependencies: ["CQueueCore"]),

        // libjack for Swift: headers and the shim for the variadic jack_client_open.
        .target(name: "CJack", linkerSettings: [.linkedLibrary("jack")]),

        // What every JACK client of jaq shares: libjack's errors and messages, the server's
        // cycle clock and freewheel, which libjack runs, port lists, device time (frame time
        // extended to 64 bits).
        .target(name: "JackCommon", dependencies: ["CJack", "QueueCore"]),

        // The queue engine's device on JACK: one client per queue.
        // Its callbacks (Realtime/) are `@_noLocks` in release builds, as QueueCore's kernels.
        .target(name: "JackDriver", dependencies: ["CJack", "JackCommon", "QueueCore"],
                swiftSettings: [.define("JAQ_CHECK_NOLOCKS", .when(configuration: .release))]),

        // The command line tool's control clients, which own no queue: ports, transport and
        // server time (JackSession), the netjack2 frame clock (NetClock). Linked into jaq alone.
        // Its process callbacks (Realtime/) are `@_noLocks` in release builds, as QueueCore's kernels.
        .target(name: "JackControl", dependencies: ["CJack", "JackCommon", "QueueCore"],
                swiftSettings: [.define("JAQ_CHECK_NOLOCKS", .when(configuration: .release))]),

        // Compressed audio through FFmpeg's libavcodec: Apple's format IDs, packets, magic cookies.
        .target(name: "AudioCodec", dependencies: ["CFFmpeg", "CFFmpegLoad", "QueueCore"]),

        // Typed Swift wrapper of libsndfile.
        .target(name: "SoundFile", dependencies: ["CSndFile"]),

        // Apple's AudioToolbox API, implemented in Swift and exported with @_cdecl.
        .target(name: "AudioToolbox", dependencies: ["CAudioToolbox", "CSoxrLoad", "SoundFile", "QueueCore", "JackDriver", "AudioCodec"]),

        // The command line tool: a client of the public API (AudioToolbox), and of JackControl
        // (with JackCommon) for the server itself (ports, transport, time, clock). LayeringTests keeps it so.
        .executableTarget(
            name: "jaq",
            dependencies: ["AudioToolbox", "JackControl", "JackCommon", "Sync",
                           .product(name: "ArgumentParser", package: "swift-argument-parser")],
            // Release links the Swift runtime into the tool (issue #29): each start is spared the
            // dynamic loader's relocations of a dozen Swift libraries, about 7 ms of a take's CPU.
            // The two libraries named are what FoundationEssentials' static archive needs, which
            // the modules (compiled against the shared runtime's) do not name for the linker.
            // Nothing else changes: the library and the other programs keep the shared runtime,
            // and the tool never opens CoreFoundation (StartupLinkTests), which would load it.
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims"],
                                          .when(platforms: [.linux], configuration: .release))]
        ),

        // The guides' programs ported to Swift (Docs/examples.md). Sources/Examples/recorder-c
        // holds recorder.c as the book prints it; it is no target: ExamplesTests compiles it with cc.
        .target(name: "ExampleSupport", dependencies: ["AudioToolbox"], path: "Sources/Examples/Support"),
        .executableTarget(name: "PlayFile", dependencies: ["AudioToolbox", "ExampleSupport"], path: "Sources/Examples/PlayFile"),
        .executableTarget(name: "RecordFile", dependencies: ["AudioToolbox", "ExampleSupport"], path: "Sources/Examples/RecordFile"),
        .executableTarget(name: "Recorder", dependencies: ["AudioToolbox"], path: "Sources/Examples/Recorder"),

        // Private jackd servers and peer tools for the tests and benchmarks.
        .target(name: "JackTestSupport", dependencies: ["SoundFile"]),
        // What the test targets share that needs swift-testing (JackTestSupport does not: jaq-bench links it):
        // a referee's crash reported as a known issue naming the tool (Docs/testing.md, "Referees").
        .target(name: "RefereeTesting", dependencies: ["JackTestSupport"], path: "Tests/RefereeTesting"),

        // make bench: jaq record against jack_capture, side by side.
        .executableTarget(name: "jaq-bench", dependencies: ["JackTestSupport", "SoundFile"], path: "Sources/Benchmarks/RecordBench"),

        // Referees for issue #29's A/B runs: the least an Audio Queue recorder and player spend (linked as jaq is).
        .executableTarget(name: "aq-floor-record", dependencies: ["AudioToolbox"], path: "Sources/Benchmarks/AQFloor",
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims"],
                                                        .when(platforms: [.linux], configuration: .release))]),
        .executableTarget(name: "aq-floor-play", dependencies: ["AudioToolbox"], path: "Sources/Benchmarks/AQFloorPlay",
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims"],
                                                        .when(platforms: [.linux], configuration: .release))]),

        // make bench: the cost of decoding AAC in an output queue, against ffmpeg's command line.
        .executableTarget(name: "codec-bench", dependencies: ["AudioToolbox", "AudioCodec", "QueueCore"], path: "Sources/Benchmarks/CodecBench"),

        // Hostile input for Audio File Services in a process of its own (make fuzz, HostileInputTests).
        .executableTarget(name: "FileFuzz", dependencies: ["AudioToolbox", "AudioCodec", "QueueCore", "SoundFile"], path: "Sources/Fuzz/FileFuzz"),

        .testTarget(name: "QueueCoreTests", dependencies: ["QueueCore", "JackTestSupport"]),
        // FileFuzz: its seedable generator (SplitMix64) for the packet fuzzer.
        .testTarget(name: "AudioCodecTests", dependencies: ["AudioCodec", "FileFuzz"]),
        .testTarget(name: "JackDriverTests", dependencies: ["JackDriver", "JackCommon", "QueueCore", "JackTestSupport"]),
        .testTarget(name: "JackControlTests", dependencies: ["JackControl"]),
        .testTarget(name: "SoundFileTests", dependencies: ["SoundFile"]),
        // Runs the built `jaq` binary, as a user would, against private servers and peer tools.
        .testTarget(name: "jaqTests", dependencies: ["jaq", "AudioToolbox", "JackTestSupport", "RefereeTesting", "SoundFile"]),
        // CPrograms/ holds C sources the tests compile with cc against libAudioToolbox.so.
        .testTarget(name: "AudioToolboxTests", dependencies: ["AudioToolbox", "SoundFile", "QueueCore", "JackDriver", "JackTestSupport", "RefereeTesting"],
                    exclude: ["CPrograms"]),
        // Runs the guides' example programs (Sources/Examples) against private servers and peer tools.
        .testTarget(name: "ExamplesTests", dependencies: ["AudioToolbox", "JackDriver", "JackTestSupport", "RefereeTesting", "ExampleSupport",
                                                          "PlayFile", "RecordFile", "Recorder"]),
        // Crashers found by fuzzing and by hand, run through FileFuzz in a child process; Fixtures/ holds them.
        .testTarget(name: "HostileInputTests", dependencies: ["AudioToolbox", "FileFuzz", "JackTestSupport"],
                    exclude: ["Fixtures", "lsan.supp"]),
    ]
)
