import Testing
import Foundation
import JackTestSupport
import RefereeTesting
import SoundFile

/// `jaq convert` (afconvert's options, on ExtAudioFile) and `jaq render -o` of other types,
/// with ffmpeg and ffprobe as referees.
@Suite(.refereeCrashesAreKnownIssues) struct ConvertCommandTests {
    let dir = scratchDirectory("convert")
    static let frames = 100_001

    /// A 16-bit stereo WAV of `frames` frames; its samples.
    @discardableResult
    func writeSource(_ name: String = "in.wav", frames: Int = frames, rate: Int = 44100) throws -> [Int16] {
        let file = try SoundFile(path: "\(dir)/\(name)", mode: .write,
                                 format: SoundFile.Info(sampleRate: rate, channelCount: 2, format: SoundFile.Format(.wav, .pcm16)))
        let samples = (0..<(frames * 2)).map { (i: Int) -> Int16 in
            let tone: Double = sin(Double(i / 2) * 0.05 * Double(1 + i % 2)) * 12000
            let noise: Int = (i &* 7919) % 301 - 150
            return Int16(tone.rounded()) &+ Int16(truncatingIfNeeded: noise)
        }
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
        return samples
    }

    func convert(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        try jaq(["convert"] + arguments, server: nil, directory: dir)
    }

    /// ffprobe's codec, sample format, rate, channels and duration_ts of the first stream.
    func probe(_ name: String) throws -> [String: String] {
        let result = try runProcess(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
                                     "stream=codec_name,sample_fmt,sample_rate,channels,duration_ts,bits_per_raw_sample:format=format_name",
                                     "-of", "default=noprint_wrappers=1", "\(dir)/\(name)"])
        var fields: [String: String] = [:]
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    /// ffmpeg decodes the file without a message; its 16-bit samples.
    func ffmpegSamples(_ name: String) throws -> [Int16] {
        let clean = try runProcess(["ffmpeg", "-v", "error", "-i", "\(dir)/\(name)", "-f", "null", "-"])
        #expect(clean.status == 0 && clean.error.isEmpty, "ffmpeg on \(name): \(clean.error)")
        let raw = "\(dir)/\(name).raw"
        _ = try runProcess(["ffmpeg", "-v", "error", "-y", "-i", "\(dir)/\(name)", "-f", "s16le", raw])
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    @Test func wavToM4AIsAACWithTheSourcesFrames() throws {
        defer { removeScratch(dir) }
        try writeSource()
        let result = try convert(["in.wav", "out.m4a"])
        #expect(result.status == 0, "\(result.error)")
        let fields = try probe("out.m4a")
        #expect(fields["codec_name"] == "aac")
        #expect(fields["duration_ts"] == "\(Self.frames)", "the edit list keeps exactly the source's frames: \(fields)")
        _ = try ffmpegSamples("out.m4a")
    }

    @Test(arguments: [["-f", "caff", "-d", "alac"], ["-f", "m4af", "-d", "alac"], ["-d", "alac"]])
    func afconvertSpellingsMakeLosslessALAC(_ options: [String]) throws {
        defer { removeScratch(dir) }
        let source = try writeSource()
        let name = options.contains("m4af") ? "out.m4a" : "out.caf"
        let result = try convert(options + ["in.wav", name])
        #expect(result.status == 0, "\(result.error)")
        #expect(try probe(name)["codec_name"] == "alac")
        let decoded = try ffmpegSamples(name)
        #expect(decoded.count == source.count && decoded == source, "ffmpeg decodes the source's samples")
    }

    @Test func linearPCMSpellingsAndTheirContainers() throws {
        defer { removeScratch(dir) }
        let source = try writeSource()
        for (options, name, codec) in [(["-d", "LEI24"], "o24.wav", "pcm_s24le"), (["-f", "AIFF", "-d", "BEI16"], "o.aif", "pcm_s16be"),
                                       (["-d", "LEF32"], "of.caf", "pcm_f32le"), (["-d", "24"], "o.flac", "flac"), ([], "o.aiff", "pcm_s16be")] {
            let result = try convert(options + ["in.wav", name])
            #expect(result.status == 0, "\(options) \(name): \(result.error)")
            let fields = try probe(name)
            #expect(fields["codec_name"] == codec, "\(name): \(fields)")
            #expect(try ffmpegSamples(name) == source, "\(name) holds the source's samples")
        }
        // afconvert's long spellings.
        #expect(try convert(["--file", "WAVE", "--data", "LEI16", "--channels", "2", "in.wav", "long.out"]).status == 0)
        #expect(try ffmpegSamples("long.out") == source)
        // AAC in, linear PCM out: the decode has the source's frame count.
        #expect(try convert(["in.wav", "a.m4a", "-b", "192000"]).status == 0)
        #expect(try convert(["-d", "LEI16", "a.m4a", "back.wav"]).status == 0)
        let back = try SoundFile(path: "\(dir)/back.wav", mode: .read)
        #expect(back.info.frameCount == Int64(Self.frames))
        try back.close()
    }

    @Test func failuresAreOneLineNamingTheFile() throws {
        defer { removeScratch(dir) }
        try writeSource()
        let missing = try convert(["absent.wav", "x.wav"])
        #expect(missing.status == 1)
        #expect(missing.error == "jaq convert: absent.wav: cannot open it: no such file (-43)\n", "\(missing.error)")
        let noType = try convert(["in.wav", "x.xyz"])
        #expect(noType.status == 64 && noType.error.split(separator: "\n").first?.contains("x.xyz: no file type") == true, "\(noType.error)")
        let badFormat = try convert(["-d", "LEI17", "in.wav", "x.wav"])
        #expect(badFormat.status == 64 && badFormat.error.contains("-d LEI17"), "\(badFormat.error)")
        let floatFLAC = try convert(["-d", "float", "in.wav", "x.flac"])
        #expect(floatFLAC.status == 64 && floatFLAC.error.contains("integer"), "\(floatFLAC.error)")
        #expect(try convert(["in.wav", "y.wav"]).status == 0)
        let exists = try convert(["in.wav", "y.wav"])
        #expect(exists.status == 1 && exists.error.contains("y.wav: exists"), "\(exists.error)")
        // A rate change needs the converter's sample-rate conversion: done, or refused in one line.
        let rate = try convert(["-d", "LEI16@48000", "in.wav", "r.wav"])
        if rate.status == 0 {
            #expect(try probe("r.wav")["sample_rate"] == "48000")
        } else {
            #expect(rate.status == 1 && rate.error.hasPrefix("jaq convert: in.wav: cannot convert 44100 Hz") && rate.error.split(separator: "\n").count == 1,
                    "\(rate.error)")
        }
    }

    /// --src-quality is kAudioConverterSampleRateConverterQuality: 127 (Max, libsoxr's 28-bit
    /// recipe) comes at least 10 dB closer to sox's `rate -v` (28-bit class) than the default
    /// (High, 20-bit), which is itself within 100 dB of it; tones below 8 kHz, float out, lag 0.
    @Test func srcQualityIsTheRateConvertersQuality() throws {
        defer { removeScratch(dir) }
        let made = try runProcess(["sox", "-n", "-r", "44100", "-c", "1", "-b", "16", "\(dir)/t.wav", "synth", "3", "sine", "1000",
                                   "synth", "sine", "mix", "3000", "synth", "sine", "mix", "7000", "vol", "0.3"])
        try #require(made.status == 0, "\(made.error)")
        let peer = try runProcess(["sox", "-D", "\(dir)/t.wav", "-e", "floating-point", "-b", "32", "\(dir)/sox.wav", "rate", "-v", "48000"])
        try #require(peer.status == 0, "\(peer.error)")
        #expect(try convert(["-d", "LEF32@48000", "t.wav", "high.wav"]).status == 0)
        let maxQuality = try convert(["--src-quality", "127", "-d", "LEF32@48000", "t.wav", "max.wav"])
        #expect(maxQuality.status == 0, "\(maxQuality.error)")
        func samples(_ name: String) throws -> [Float] {
            let file = try SoundFile(path: "\(dir)/\(name)", mode: .read)
            defer { try? file.close() }
            var samples = [Float](repeating: 0, count: Int(file.frameCount))
            let read = samples.withUnsafeMutableBufferPointer { file.readFrames(into: $0) }
            return Array(samples.prefix(read.count))
        }
        let reference = try samples("sox.wav")
        func snr(_ name: String) throws -> Double {
            let x = try samples(name)
            #expect(x.count == reference.count, "\(name): \(x.count) frames, sox \(reference.count)")
            let range = 1000..<(min(x.count, reference.count) - 1000)
            let signal = range.reduce(0.0) { $0 + Double(reference[$1]) * Double(reference[$1]) }
            let error = range.reduce(0.0) { $0 + pow(Double(x[$1]) - Double(reference[$1]), 2) }
            return 10 * log10(signal / max(error, 1e-30))
        }
        let high = try snr("high.wav"), best = try snr("max.wav")
        #expect(high >= 100, "High: \(high) dB against sox rate -v")
        #expect(best >= high + 10, "Max: \(best) dB, High: \(high) dB against sox rate -v")
        let bad = try convert(["--src-quality", "128", "t.wav", "x.wav"])
        #expect(bad.status == 64 && bad.error.contains("--src-quality 128"), "\(bad.error)")
    }

    /// `jaq render -o x.flac` writes FLAC (it wrote WAV data under any name), 24-bit by default,
    /// with the samples the WAV render has.
    @Test func renderWritesTheTypeItsOutputNames() throws {
        defer { removeScratch(dir) }
        let source = try writeSource(frames: 20_000)
        for name in ["mix.flac", "mix.aiff", "mix.caf", "mix.wav"] {
            let result = try jaq(["render", "-o", name, "in.wav"], server: nil, directory: dir)
            #expect(result.status == 0, "\(name): \(result.error)")
        }
        #expect(try probe("mix.flac")["format_name"] == "flac")
        #expect(try probe("mix.flac")["bits_per_raw_sample"] == "24")
        #expect(try probe("mix.aiff")["codec_name"] == "pcm_s24be")
        #expect(try probe("mix.caf")["format_name"] == "caf")
        for name in ["mix.flac", "mix.aiff", "mix.caf", "mix.wav"] {
            #expect(try ffmpegSamples(name) == source, "\(name) holds the mix (unity gain: the source)")
        }
        let refused = try jaq(["render", "-o", "mix.m4a", "in.wav"], server: nil, directory: dir)
        #expect(refused.status == 64 && refused.error.contains("mix.m4a"), "\(refused.error)")
    }
}
