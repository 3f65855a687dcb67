import ArgumentParser
import AudioToolbox
import FoundationEssentials
import Glibc

/// `jaq convert IN OUT`: macOS's afconvert for JACK users, on Extended Audio File Services.
struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        _superCommandName: "jaq",
        abstract: "Convert an audio file to another file type or data format (afconvert's options).",
        discussion: """
            Reads IN through ExtAudioFile and writes OUT in the file type and data format asked \
            for, as macOS's afconvert does; AAC priming and padding are trimmed on reading and \
            recorded on writing, so OUT has exactly IN's frames.

            -f TYPE: caff, m4af, mp4f, adts, WAVE, AIFF, AIFC, W64f, RF64, flac, MPG3, OggV, OggO \
            (afconvert's codes), or caf, m4a, wav, aiff, w64, flac, mp3, ogg, opus; default: \
            OUT's extension.
            -d FORMAT[@RATE]: aac, alac, flac, opus, ima4, ulaw, alaw; linear PCM as afconvert \
            writes it (LEI16, BEI24, LEF32, UI8...) or as jaq does (16, 24, 32, float); default: \
            AAC for m4a/mp4/adts, IN's linear PCM (16-bit for compressed IN) for the others.
            -b BITRATE: the encoder's bit rate in bits per second (AAC, Opus).
            -c CHANNELS: the channel count of OUT (default IN's).
            --src-quality Q: the sample-rate converter's quality, 0-127 as afconvert's \
            (kAudioConverterSampleRateConverterQuality; default 96, High: libsoxr's 20-bit \
            recipe; 127, Max: its 28-bit one).

            A sample rate or channel count other than IN's goes through the AudioConverter \
            (libsoxr for the rate, at --src-quality); a rate libsoxr refuses is one line, exit 1.

            Examples:
              jaq convert -f m4af -d aac -b 256000 take.wav take.m4a
              jaq convert take.wav take.caf -d alac
              jaq convert -d LEI16 song.m4a song.wav
            """)

    @Option(name: [.customShort("f"), .customLong("file")], help: ArgumentHelp("The file type of OUT (default: its extension).", valueName: "type"))
    var fileType: String?

    @Option(name: [.customShort("d"), .customLong("data")], help: ArgumentHelp("The data format of OUT, and its sample rate after @.", valueName: "format[@rate]"))
    var dataFormat: String?

    @Option(name: [.customShort("b"), .customLong("bitrate")], help: ArgumentHelp("The encoder's bit rate, bits per second.", valueName: "bitrate"))
    var bitRate: Int?

    @Option(name: [.customShort("c"), .customLong("channels")], help: ArgumentHelp("The channel count of OUT.", valueName: "channels"))
    var channels: Int?

    @Option(name: .customLong("src-quality"), help: ArgumentHelp("The sample-rate converter's quality, 0-127 (default 96, High).", valueName: "quality"))
    var srcQuality: Int?

    @Flag(name: .long, help: "Replace OUT if it exists (without it, jaq convert refuses, as jaq record does).")
    var force = false

    @OptionGroup var quietOption: QuietOption

    @Argument(help: "The file to convert.")
    var input: String

    @Argument(help: "The file to write.")
    var output: String

    func run() throws {
        try runReportingFailure("jaq convert", quiet: quietOption.quiet) { try convert() }
    }

    func validate() throws {
        let type = try outputType
        if case .pcm(_, let float, _, _)? = try requestedFormat?.kind {
            if float, type.holdsIntegersOnly { throw ValidationError("-d \(dataFormat ?? ""): \(type.name) holds integer samples") }
            if type.holdsPacketsOnly { throw ValidationError("\(output): \(type.name) files hold compressed audio (-d aac or alac)") }
        }
        if let channels, !(1...64).contains(channels) { throw ValidationError("-c \(channels): a channel count is 1 to 64") }
        if let bitRate, bitRate <= 0 { throw ValidationError("-b \(bitRate): a bit rate is bits per second") }
        if let srcQuality, !(0...127).contains(srcQuality) { throw ValidationError("--src-quality \(srcQuality): a quality is 0 to 127") }
    }

    /// -f, else OUT's extension.
    var outputType: OutputFileType {
        get throws {
            if let fileType {
                guard let named = OutputFileType(spelling: fileType) else {
                    throw ValidationError("-f \(fileType): not a file type jaq writes (caff, m4af, WAVE, AIFF, flac, ...)")
                }
                return named
            }
            guard let guessed = OutputFileType(path: output) else {
                throw ValidationError("\(output): no file type in its extension; name one with -f (caff, m4af, WAVE, AIFF, flac, ...)")
            }
            return guessed
        }
    }

    /// -d, parsed; nil when absent.
    var requestedFormat: DataFormatSpelling? {
        get throws {
            guard let dataFormat else { return nil }
            guard let parsed = DataFormatSpelling(dataFormat) else {
                throw ValidationError("-d \(dataFormat): not a data format (aac, alac, LEI16, BEF32, 24, float, ...[@rate])")
            }
            return parsed
        }
    }

    /// OUT's type and data format, from the options and IN's format.
    func plan(source: AudioStreamBasicDescription) throws -> (OutputFileType, AudioStreamBasicDescription) {
        let type = try outputType
        let spelling = try requestedFormat ?? DataFormatSpelling(defaultFor: type, source: source)
        let bits = source.mFormatID == kAudioFormatLinearPCM ? Int(source.mBitsPerChannel) : alacSourceBits(source)
        var format = spelling.description(channels: channels ?? Int(source.mChannelsPerFrame), rate: spelling.sampleRate ?? source.mSampleRate,
                                          type: type, sourceBits: bits)
        if type.holdsIntegersOnly, format.mFormatID == kAudioFormatLinearPCM, format.mFormatFlags & kAudioFormatFlagIsFloat != 0 {
            throw CLIError("-d \(dataFormat ?? "float"): \(type.name) holds integer samples", exitCode: CLIError.usage)
        }
        if type.holdsPacketsOnly, format.mFormatID == kAudioFormatLinearPCM {
            throw CLIError("\(output): \(type.name) files hold compressed audio (-d aac or alac)", exitCode: CLIError.usage)
        }
        if format.mFormatID == kAudioFormatLinearPCM, type.id == kAudioFileWAVEType || type.id == kAudioFileWave64Type || type.id == kAudioFileRF64Type {
            format.mFormatFlags &= ~kAudioFormatFlagIsBigEndian
        }
        return (type, format)
    }

    private func alacSourceBits(_ source: AudioStreamBasicDescription) -> Int {
        guard source.mFormatID == kAudioFormatAppleLossless else { return 16 }
        return [1: 16, 2: 20, 3: 24, 4: 32][source.mFormatFlags] ?? 16
    }

    func convert() throws {
        if sameFile(input, output) { throw CLIError("\(output): is IN itself (write to another file)", exitCode: CLIError.usage) }
        if FileManager.default.fileExists(atPath: output), !force { throw CLIError("\(output): exists (--force replaces it)") }
        let reader = try ConvertReader(path: input)
        let (type, format) = try plan(source: reader.fileFormat)
        let client = packedPCMFormat(rate: format.mSampleRate, channels: Int(format.mChannelsPerFrame), bits: 32, float: true)
        try reader.setClient(client)
        if let srcQuality { try reader.setRateConverterQuality(UInt32(srcQuality)) }
        let writer = try ConvertWriter(path: output, type: type, format: format, client: client, bitRate: bitRate)
        let progress = ProgressLine(enabled: stdoutIsTerminal && !quietOption.quiet && reader.length > Int64(client.mSampleRate * 10))
        var written: Int64 = 0
        var failure: Error?
        do {
            while let chunk = try reader.next() {
                try writer.write(chunk)
                written += Int64(chunk.frames)
                progress.update("\(input): \(Self.percent(written, of: reader.length, from: reader.fileFormat.mSampleRate, to: client.mSampleRate))%")
            }
        } catch {
            failure = error
        }
        progress.finish()
        // What was converted so far stays a playable file.
        try writer.finish()
        if let failure { throw failure }
        Log.info("\(output): \(written) frames, \(format.mChannelsPerFrame) channels at \(Int(format.mSampleRate)) Hz, "
                 + "\(type.name) \(format.mFormatID == kAudioFormatLinearPCM ? FileReport.describe(format, fileType: 0) : fourCharacterCode(format.mFormatID))")
    }
}

extension ConvertCommand {
    /// The progress of `written` output frames (at `outputRate`) through IN's `length` frames
    /// (at `inputRate`), in percent: IN's length is scaled to the output's rate.
    static func percent(_ written: Int64, of length: Int64, from inputRate: Double, to outputRate: Double) -> Int {
        let total = max(inputRate > 0 && outputRate > 0 ? Double(length) * outputRate / inputRate : Double(length), 1)
        return min(Int(Double(written) / total * 100), 100)
    }

    /// Whether `a` and `b` name the same file (its device and inode; a path that is not there
    /// is no file yet).
    func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }
}

extension DataFormatSpelling {
    /// OUT's data format when -d is absent: AAC for MPEG-4 and ADTS, IN's linear PCM for the others.
    init(defaultFor type: OutputFileType, source: AudioStreamBasicDescription) {
        let pcm = source.mFormatID == kAudioFormatLinearPCM
        let float = pcm && source.mFormatFlags & kAudioFormatFlagIsFloat != 0
        var bits = pcm ? Int(source.mBitsPerChannel) : (source.mFormatID == kAudioFormatAppleLossless && source.mFormatFlags >= 3 ? 24 : 16)
        if type.holdsPacketsOnly {
            self.init(kind: .codec(kAudioFormatMPEG4AAC), sampleRate: nil)
        } else if type.holdsIntegersOnly {
            bits = [kAudioFileFLACType, kAudioFileAIFFType].contains(type.id) ? (float ? 24 : min(max(bits, 16), 24)) : 16
            self.init(kind: .pcm(bits: bits, float: false, unsigned: false, bigEndian: nil), sampleRate: nil)
        } else {
            self.init(kind: .pcm(bits: bits, float: float, unsigned: pcm && bits == 8 && source.mFormatFlags & kAudioFormatFlagIsSignedInteger == 0,
                                 bigEndian: nil), sampleRate: nil)
        }
    }
}
