import Foundation
import JackTestSupport
import Testing

/// The release libAudioToolbox.so — the one `make install` and `make deb` ship — exports every
/// function and variable the C headers declare and nothing else, and the guides' C programs build and run
/// against it. (A debug build exports more than it should: SwiftPM compiles it with
/// -enable-testing, which makes internal declarations visible; the release build is the truth.)
@Suite(.serialized) struct ReleaseLibraryTests {
    let scratch: Scratch
    let libraries: String
    init() throws {
        scratch = try Scratch()
        libraries = try ReleaseProducts.directory()
    }

    static let includeDirectory = CProgram.packageRoot.appendingPathComponent("Sources/CAudioToolbox/include").path

    /// The symbols a C program using every declaration of the headers under include/ needs.
    /// gcc -aux-info lists each function prototype with the header declaring it; the extern
    /// variables are the headers' `extern` lines. A probe taking the address of each is compiled
    /// and its undefined symbols are what the linker must find: the CoreFoundation names are
    /// asm labels (CFRelease is jaq_CFRelease), which the probe resolves as any program would.
    func symbolsTheHeadersDeclare() throws -> (names: [String], symbols: Set<String>) {
        let cc = try #require(tool("cc"), "cc is not installed (apt-get install gcc)")
        try Data("#include <AudioToolbox/AudioToolbox.h>\n".utf8).write(to: scratch.url("all.c"))
        let aux = try run(cc, ["-fsyntax-only", "-I", Self.includeDirectory, "-aux-info", scratch.path("aux.txt"), scratch.path("all.c")])
        try #require(aux.status == 0, "cc -aux-info failed: \(aux.stderr)")
        var names: [String] = []
        for line in try String(contentsOfFile: scratch.path("aux.txt"), encoding: .utf8).split(separator: "\n") {
            // "/* <header>:<line>:NC */ extern OSStatus AudioQueueStart (AudioQueueRef, ...);"
            guard let close = line.range(of: "*/"), line.contains(Self.includeDirectory) else { continue }
            let declaration = line[close.upperBound...]
            guard !declaration.contains("static "), let paren = declaration.range(of: " (") else { continue }
            if let name = declaration[..<paren.lowerBound].split(separator: " ").last.map({ String($0.drop { $0 == "*" }) }) {
                names.append(name)
            }
        }
        let headers = try FileManager.default.subpathsOfDirectory(atPath: Self.includeDirectory).filter { $0.hasSuffix(".h") }
        for header in headers {
            for line in try String(contentsOfFile: "\(Self.includeDirectory)/\(header)", encoding: .utf8).split(separator: "\n")
            where line.hasPrefix("extern ") && !line.hasPrefix("extern \"C\"") {
                // "extern const CFRunLoopMode kCFRunLoopDefaultMode JAQ_CF_FORWARD(kCFRunLoopDefaultMode);"
                let beforeLabel = line.split(separator: "JAQ_CF_FORWARD").first ?? line
                if let name = beforeLabel.split(whereSeparator: { $0 == " " || $0 == ";" || $0 == "*" }).last { names.append(String(name)) }
            }
        }
        let probe = "#include <AudioToolbox/AudioToolbox.h>\nvoid *const probe[] = {\n"
            + names.map { "    (void *)&\($0),\n" }.joined() + "};\n"
        try Data(probe.utf8).write(to: scratch.url("probe.c"))
        let compile = try run(cc, ["-c", "-Wno-deprecated-declarations", "-I", Self.includeDirectory,
                                   scratch.path("probe.c"), "-o", scratch.path("probe.o")])
        try #require(compile.status == 0, "the probe does not compile: \(compile.stderr)")
        let undefined = try run("/usr/bin/nm", ["-u", scratch.path("probe.o")])
        let symbols = Set(String(decoding: undefined.stdout, as: UTF8.self).split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
        return (names, symbols)
    }

    @Test func everyFunctionAndVariableTheHeadersDeclareIsExported() throws {
        let declared = try symbolsTheHeadersDeclare()
        // The probe found the API (and one symbol per declaration), not an empty list.
        #expect(["AudioQueueNewOutput", "AudioQueueNewInput", "AudioFileCreateWithURL", "CFRunLoopRunInMode",
                 "kCFRunLoopCommonModes"].allSatisfy(declared.names.contains), "\(declared.names)")
        #expect(declared.symbols.count == Set(declared.names).count, "\(declared.symbols.sorted()) for \(declared.names.sorted())")

        let library = "\(libraries)/libAudioToolbox.so"
        let nm = try run("/usr/bin/nm", ["-D", "--defined-only", library])
        try #require(nm.status == 0, "nm -D \(library): \(nm.stderr)")
        // "AudioQueueStart@@AUDIOTOOLBOX_1": the names, without their version (Configs/libAudioToolbox.map).
        let exported = Set(String(decoding: nm.stdout, as: UTF8.self).split(separator: "\n")
            .compactMap { $0.split(separator: " ").last.map { String($0.split(separator: "@")[0]) } }).subtracting(["AUDIOTOOLBOX_1"])
        let missing = declared.symbols.subtracting(exported).sorted()
        #expect(missing.isEmpty, "\(library) does not export \(missing.count) of the \(declared.symbols.count) symbols the headers declare: \(missing)")
        // And nothing else: no Swift symbol, no loader shim (av_*, rubberband_*, jaq_jack_*).
        let extra = exported.subtracting(declared.symbols).sorted()
        #expect(extra.isEmpty, "\(library) exports \(extra.count) symbols the headers do not declare: \(extra.prefix(10))")
        print("measured: \(library) exports all \(declared.symbols.count - missing.count)/\(declared.symbols.count) symbols the headers declare")
    }

    @Test func audioFileDemoBuildsAndRunsAgainstTheReleaseLibrary() throws {
        let program = scratch.url("audiofile_demo")
        let build = try CProgram.compile(CExampleTests.source, into: program, flags: ["-Wall", "-Werror"], libraries: libraries)
        try #require(build.status == 0, "cc against \(libraries)/libAudioToolbox.so failed:\n\(build.diagnostics)")
        try expectLoadsReleaseLibrary(program.path)

        let result = try run(program.path, [scratch.path("demo.aiff")])
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "audiofile_demo exited \(result.status): \(output)\(result.stderr)")
        #expect(output.contains("packets: 44100 written, 44100 in the file, 44100 read back"), "\(output)")
        #expect(output.contains("all packets match"), "\(output)")
    }

    @Test func recorderDotCRecordsAgainstTheReleaseLibrary() throws {
        let program = scratch.url("recorder")
        let build = try CProgram.compile("Sources/Examples/recorder-c/recorder.c", into: program, libraries: libraries)
        try #require(build.status == 0, "cc against \(libraries)/libAudioToolbox.so failed:\n\(build.diagnostics)")
        try expectLoadsReleaseLibrary(program.path)

        let server = try JackServer(sampleRate: 44100, periodFrames: 256)
        defer { server.stop() }
        let take = scratch.path("take.aif")
        let result = try runProcess([program.path, take, "1"], environment: server.environment, timeout: 30)
        #expect(result.status == 0, "recorder exited \(result.status): \(result.output)\(result.error)")
        let soxi = try #require(tool("soxi"), "soxi is not installed (apt-get install sox)")
        #expect(try run(soxi, ["-t", take]).stdout == Data("aiff\n".utf8))
        #expect(try run(soxi, ["-c", take]).stdout == Data("2\n".utf8))
        // One second of the server's capture ports, give or take its periods.
        let frames = Int(String(decoding: try run(soxi, ["-s", take]).stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(frames - 44100) < 8 * 256, "\(frames) frames recorded in 1 s")
    }

    /// The program runs with the release library, not the debug one beside the test binary.
    func expectLoadsReleaseLibrary(_ program: String) throws {
        let ldd = String(decoding: try run("/usr/bin/ldd", [program]).stdout, as: UTF8.self)
        #expect(ldd.contains("libAudioToolbox.so => \(libraries)/libAudioToolbox.so"), "\(ldd)")
    }
}
