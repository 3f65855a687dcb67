import Foundation
import Testing
import AudioToolbox
import JackTestSupport

/// What ported code includes and calls around Audio Toolbox (issue #25, item 6), from C
/// (Tests/AudioToolboxTests/CPrograms/audio_format.c, built -Wall -Wextra -Werror) and Swift.
@Suite struct PortingCallsTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    @Test func aCProgramUsingCFSTRFillOutASBDAndAudioFormatBuildsCleanAndRuns() throws {
        let program = scratch.url("audio_format")
        let build = try CProgram.compile("Tests/AudioToolboxTests/CPrograms/audio_format.c", into: program,
                                         flags: ["-Wall", "-Wextra", "-Werror", "-std=c11"])
        try #require(build.status == 0, "cc -Wall -Wextra -Werror failed:\n\(build.diagnostics)")
        let result = try run(program.path, [scratch.path])
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "audio_format exited \(result.status):\n\(output)\(result.stderr)")
        for line in ["codes: 0 -4 -50 -43",
                     "aac: 1024 frames per packet, 0 bytes per packet", "name: MPEG-4 AAC",
                     "lpcm: 6 bytes per frame, 6 bytes per packet, 1 frames per packet",
                     "name: Linear PCM, 24 bit little-endian signed integer, 2 channels, 48000 Hz",
                     "FillOutASBDForLPCM: flags 0xc, 4 bytes per frame",
                     "info: approximate duration in seconds = 1", "duration: 1", "0 failures"] {
            #expect(output.contains(line + "\n"), "missing \"\(line)\" in:\n\(output)")
        }
        // The file it wrote through CFURLCreateWithFileSystemPath is where the path says.
        let soxi = try #require(tool("soxi"), "soxi is not installed (apt-get install sox)")
        #expect(try run(soxi, ["-s", scratch.path("info.wav")]).stdout == Data("44100\n".utf8))
    }

    @Test func theCPlusPlusSpellingOfTheHeadersCompilesToo() throws {
        let cxx = try #require(tool("c++"), "c++ is not installed (apt-get install g++)")
        try Data("#include <CoreAudio/CoreAudioTypes.h>\n#include <AudioToolbox/AudioToolbox.h>\nint main() { AudioStreamBasicDescription f; FillOutASBDForLPCM(&f, 44100, 2, 16, 16, false, false, false); CFStringRef s = CFSTR(\"x\"); return (int)f.mBytesPerFrame - 4 + (s ? 0 : 1); }\n".utf8)
            .write(to: scratch.url("probe.cpp"))
        let build = try run(cxx, ["-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I",
                                  CProgram.packageRoot.appendingPathComponent("Sources/CAudioToolbox/include").path, scratch.path("probe.cpp")])
        #expect(build.status == 0, "\(build.stderr)")
    }

    @Test func theInfoDictionaryHoldsTheApproximateDuration() throws {
        var format = AudioStreamBasicDescription()
        FillOutASBDForLPCM(&format, 44100, 1, 16, 16, false, false, false)
        let url = scratch.url("half.wav")
        let (created, file) = AF.create(url, kAudioFileWAVEType, format)
        expectStatus(created)
        let samples = [Int16](repeating: 0, count: 22050)
        var packets = UInt32(samples.count)
        expectStatus(AudioFileWritePackets(file!, false, UInt32(samples.count * 2), nil, 0, &packets, samples))

        var size: UInt32 = 0
        var writable: UInt32 = 1
        expectStatus(AudioFileGetPropertyInfo(file!, kAudioFilePropertyInfoDictionary, &size, &writable))
        #expect(size == 8 && writable == 0)
        var dictionary: Unmanaged<CFDictionary>?
        size = 4
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyInfoDictionary, &size, &dictionary), kAudioFileBadPropertySizeError)
        size = 8
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyInfoDictionary, &size, &dictionary))
        let info = try #require(dictionary).takeRetainedValue()
        #expect(CFDictionaryGetCount(info) == 1)
        let key = CFString.make("approximate duration in seconds")
        let value = try #require(CFDictionaryGetValue(info, Unmanaged.passUnretained(key).toOpaque()))
        #expect(String(Unmanaged<CFString>.fromOpaque(value).takeUnretainedValue()) == "0.5")
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyInfoDictionary, 8, &dictionary), kAudioFileUnsupportedPropertyError)
        expectStatus(AudioFileClose(file!))
    }

    @Test func theInfoDictionaryHoldsAFilesTextTags() throws {
        // ffmpeg writes title and artist in the WAV's LIST INFO chunk (INAM, IART).
        let ffmpeg = try #require(tool("ffmpeg"), "ffmpeg is not installed (apt-get install ffmpeg)")
        let path = scratch.path("tagged.wav")
        let made = try run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "2", "-c:a", "pcm_s16le",
                                    "-metadata", "title=A Title", "-metadata", "artist=Somebody", path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        let (opened, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(opened)
        var dictionary: Unmanaged<CFDictionary>?
        var size: UInt32 = 8
        expectStatus(AudioFileGetProperty(file!, kAudioFilePropertyInfoDictionary, &size, &dictionary))
        let info = try #require(dictionary).takeRetainedValue()
        func value(_ key: String) -> String? {
            let key = CFString.make(key)
            return CFDictionaryGetValue(info, Unmanaged.passUnretained(key).toOpaque())
                .map { String(Unmanaged<CFString>.fromOpaque($0).takeUnretainedValue()) }
        }
        #expect(value("title") == "A Title" && value("artist") == "Somebody" && value("approximate duration in seconds") == "2")
        #expect(value("album") == nil)
        expectStatus(AudioFileClose(file!))
    }

    @Test func cfURLCreateWithFileSystemPathTakesPOSIXPaths() {
        let url = CFURLCreateWithFileSystemPath(nil, CFString.make("/tmp/a b.wav"), .cfurlposixPathStyle, false)
        #expect(url?.path == "/tmp/a b.wav")
        #expect(CFURLCreateWithFileSystemPath(nil, CFString.make("C:\\a.wav"), .cfurlWindowsPathStyle, false) == nil)
    }
}
