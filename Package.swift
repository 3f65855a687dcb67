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

        // The Apple-compatible C API: headers, layout checks, CoreFoundation forwarders.
        .target(name: "CAudioToolbox", linkerSettings: [.linkedLibrary("Foundation")]),

        // Typed Swift wrapper of libsndfile.
        .target(name: "SoundFile", dependencies: ["CSndFile"]),

        // Apple's AudioToolbox API, implemented in Swift and exported with @_cdecl.
        .target(name: "AudioToolbox", dependencies: ["CAudioToolbox", "SoundFile"]),

        // The command line tool.
        .executableTarget(
            name: "jaq",
            dependencies: ["AudioToolbox", "SoundFile", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        .testTarget(name: "SoundFileTests", dependencies: ["SoundFile"]),
        // Runs the built `jaq` binary, as a user would.
        .testTarget(name: "jaqTests", dependencies: ["jaq", "AudioToolbox"]),
        // CPrograms/ holds C sources the tests compile with cc against libAudioToolbox.so.
        .testTarget(name: "AudioToolboxTests", dependencies: ["AudioToolbox", "SoundFile"], exclude: ["CPrograms"]),
    ]
)
