import ArgumentParser
import AudioToolbox
import FoundationEssentials
import Glibc

/// `jaq info FILE...`: what a file holds, through Audio File Services.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        _superCommandName: "jaq",
        abstract: "Show the container, data format, length and peak levels of audio files.",
        discussion: """
            Opens each FILE with Audio File Services (libsndfile underneath) and prints its \
            container, data format, sample rate, channels, frames, duration and the peak level \
            of each channel, in dBFS and as a linear value (1.0 is full scale). Compressed files \
            (FLAC, Ogg Vorbis/Opus, MP3) are described as the linear PCM they decode to.

            A file that cannot be read gets one line on standard error, \
            "jaq info: <path>: <reason> (<code>)", where <code> is the Audio File Services \
            result code; the other files are still described and the exit status is 1.

            Examples:
              jaq info take.wav
              jaq info takes/*.caf
              jaq info --json take.flac | jq '.[0].peaks[].dBFS'
              jaq info --json a.wav b.aiff | jq '.[] | {path, frames}'
            """
    )

    @Flag(help: "Print JSON for scripts: an array with one object per file.")
    var json = false

    @OptionGroup var quietOption: QuietOption

    @Argument(help: "The audio files to describe.")
    var files: [String]

    func run() throws {
        var reports: [FileReport] = []
        var failed = false
        for path in files {
            do {
                reports.append(try FileReport(path: path))
            } catch {
                StandardStreams.error("jaq info: \(path): \(error.reason) (\(error.code))\n")
                failed = true
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            // Always an array, one object per file described, so a script reads one shape.
            print(String(decoding: try encoder.encode(reports), as: UTF8.self))
        } else if !reports.isEmpty {
            print(reports.map(\.text).joined(separator: "\n\n"))
        }
        if failed { throw ExitCode.failure }
    }
}

/// Why a file could not be described: the result code and its meaning.
struct InfoFailure: Error {
    let status: OSStatus
    let reason: String

    init(_ status: OSStatus, _ reason: String? = nil) {
        self.status = status
        self.reason = reason ?? statusMessage(status, readingFile: true) ?? "cannot be read"
    }

    /// The code as Apple prints it: 'typ?' for four-char codes, the number otherwise.
    var code: String { fourCharacterCode(status) }
}

/// What `jaq info` says about one file.
struct FileReport: Encodable {
    struct Peak: Encodable {
        /// The largest absolute sample value; 1.0 is full scale.
        let linear: Double
        /// `linear` in dB relative to full scale; nil (JSON null) for silence.
        let dBFS: Double?

        private enum CodingKeys: String, CodingKey { case linear, dBFS }

        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(linear, forKey: .linear)
            try container.encode(dBFS, forKey: .dBFS) // null for silence, not left out
        }
    }

    let path: String
    let container: String
    let fileType: String
    let format: String
    let formatID: String
    let formatFlags: UInt32
    let bitsPerChannel: UInt32
    let sampleRate: Double
    let channels: Int
    let frames: Int64
    let duration: Double
    let peaks: [Peak]
    /// Packets, priming and padding of compressed files (nil, left out of JSON, for PCM).
    let packets: PacketInfo?
    /// The Broadcast Wave chunk's time reference (samples; nil, left out of JSON, without one),
    /// and who wrote the chunk.
    let timeReference: UInt64?
    let originator: String?

    init(path: String) throws(InfoFailure) {
        var fileID: AudioFileID?
        let status = AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &fileID)
        guard status == noErr, let file = fileID else { throw InfoFailure(status) }
        defer { AudioFileClose(file) }

        let fileType: AudioFileTypeID = try Self.property(file, kAudioFilePropertyFileFormat)
        let dataFormat: AudioStreamBasicDescription = try Self.property(file, kAudioFilePropertyDataFormat)
        let packets: UInt64 = try Self.property(file, kAudioFilePropertyAudioDataPacketCount)

        self.path = path
        self.fileType = fourCharacterCode(fileType, quoted: false)
        container = Self.containerName(fileType, file: file)
        format = dataFormat.mBytesPerFrame == 0 && dataFormat.mFormatID != kAudioFormatLinearPCM
            ? PacketInfo.codecText(dataFormat, bitRate: Self.bitRate(file)) : Self.describe(dataFormat, fileType: fileType)
        formatID = fourCharacterCode(dataFormat.mFormatID, quoted: false)
        formatFlags = dataFormat.mFormatFlags
        bitsPerChannel = dataFormat.mBitsPerChannel
        sampleRate = dataFormat.mSampleRate
        channels = Int(dataFormat.mChannelsPerFrame)
        self.packets = PacketInfo(file, format: dataFormat)
        frames = self.packets?.validFrames ?? Int64(packets) * Int64(max(dataFormat.mFramesPerPacket, 1))
        duration = dataFormat.mSampleRate > 0 ? Double(frames) / dataFormat.mSampleRate : 0
        let linearPeaks: [Double]
        if let info = self.packets {
            linearPeaks = try info.peaks(file, format: dataFormat)
        } else {
            let largest: UInt32 = try Self.property(file, kAudioFilePropertyMaximumPacketSize)
            linearPeaks = try FilePeaks.measure(file, format: dataFormat, packetCount: Int64(packets),
                                                maximumPacketSize: Int(largest), cookie: [])
        }
        peaks = linearPeaks.map { Peak(linear: $0, dBFS: $0 > 0 ? 20 * log10($0) : nil) }
        let broadcast = fileType == kAudioFileWAVEType || fileType == kAudioFileRF64Type
            ? AudioTakeFile.broadcastWave(ofFileAt: path) : nil
        timeReference = broadcast?.timeReference
        originator = broadcast?.originator
    }

    /// The text `jaq info` prints.
    var text: String {
        let peakText = peaks.enumerated().map { index, peak in
            let decibels = peak.dBFS.map { String(cFormat: "%.2f dBFS", $0) } ?? "-inf dBFS"
            return "ch\(index + 1) \(decibels) (\(String(cFormat: "%.4f", peak.linear)))"
        }.joined(separator: "  ")
        let rate = sampleRate == sampleRate.rounded() ? String(Int(sampleRate)) : String(sampleRate)
        return """
            \(path)
              container:   \(container) ('\(fileType)')
              format:      \(format)
              sample rate: \(rate) Hz
              channels:    \(channels)
              frames:      \(frames)
              duration:    \(String(cFormat: "%.3f", duration)) s (\(Self.clock(duration)))\(packetText)\(timeReferenceText)
              peak:        \(peakText)
            """
    }

    /// The Broadcast Wave line ("" without a bext chunk): the time reference in samples and
    /// as a time at the file's rate, and its writer.
    private var timeReferenceText: String {
        guard let timeReference else { return "" }
        let seconds = sampleRate > 0 ? Double(timeReference) / sampleRate : 0
        let writer = originator.map { $0.isEmpty ? "" : ", written by \($0)" } ?? ""
        return "\n  time ref:    \(timeReference) samples (\(Self.clock(seconds))) (Broadcast Wave\(writer))"
    }

    /// The packets line of compressed files ("" for PCM).
    private var packetText: String {
        guard let packets else { return "" }
        return "\n  packets:     \(packets.packets), priming \(packets.primingFrames) frames, remainder \(packets.remainderFrames) frames"
    }

    // MARK: Reading

    private static func bitRate(_ file: AudioFileID) -> UInt32 {
        (try? property(file, kAudioFilePropertyBitRate) as UInt32) ?? 0
    }

    private static func property<Value: BitwiseCopyable>(_ file: AudioFileID, _ id: AudioFilePropertyID) throws(InfoFailure) -> Value {
        var size = UInt32(MemoryLayout<Value>.size)
        let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        defer { value.deallocate() }
        let status = AudioFileGetProperty(file, id, &size, value)
        guard status == noErr else { throw InfoFailure(status, "cannot read property \(fourCharacterCode(id))") }
        return value.pointee
    }

    // MARK: Words

    /// "16-bit signed big-endian integer", "32-bit little-endian float", "8-bit µ-law"; for
    /// compressed files, what they decode to and from what.
    static func describe(_ format: AudioStreamBasicDescription, fileType: AudioFileTypeID) -> String {
        let flags = format.mFormatFlags
        let bits = format.mBitsPerChannel
        let order = bits > 8 ? (flags & kAudioFormatFlagIsBigEndian != 0 ? " big-endian" : " little-endian") : ""
        var text: String
        switch format.mFormatID {
        case kAudioFormatLinearPCM where flags & kAudioFormatFlagIsFloat != 0: text = "\(bits)-bit\(order) float"
        case kAudioFormatLinearPCM where flags & kAudioFormatFlagIsSignedInteger != 0: text = "\(bits)-bit signed\(order) integer"
        case kAudioFormatLinearPCM: text = "\(bits)-bit unsigned\(order) integer"
        case kAudioFormatULaw: text = "8-bit µ-law"
        case kAudioFormatALaw: text = "8-bit A-law"
        default: text = "\(fourCharacterCode(format.mFormatID)) \(bits)-bit"
        }
        let codecs: [AudioFileTypeID: String] = [
            kAudioFileFLACType: "FLAC", kAudioFileOggVorbisType: "Vorbis", kAudioFileOggOpusType: "Opus",
            kAudioFileMP3Type: "MP3", kAudioFileMP2Type: "MP2", kAudioFileMP1Type: "MP1",
        ]
        if let codec = codecs[fileType] { text += ", decoded from \(codec)" }
        return text
    }

    private static func containerName(_ type: AudioFileTypeID, file: AudioFileID) -> String {
        let names: [AudioFileTypeID: String] = [
            kAudioFileWAVEType: "WAVE", kAudioFileAIFFType: "AIFF", kAudioFileAIFCType: "AIFC", kAudioFileCAFType: "CAF",
            kAudioFileWave64Type: "Wave64", kAudioFileRF64Type: "RF64", kAudioFileBW64Type: "BW64",
            kAudioFileNextType: "NeXT/Sun", kAudioFileFLACType: "FLAC", kAudioFileMP3Type: "MP3", kAudioFileMP2Type: "MP2",
            kAudioFileMP1Type: "MP1", kAudioFileOggVorbisType: "Ogg Vorbis", kAudioFileOggOpusType: "Ogg Opus",
                kAudioFileSoundDesigner2Type: "Sound Designer II", kAudioFileM4AType: "MPEG-4 audio (.m4a)",
            kAudioFileMPEG4Type: "MPEG-4", kAudioFileAAC_ADTSType: "AAC ADTS", kAudioFile3GPType: "3GPP",
        ]
        if let name = names[type] { return name }
        // A type Apple has no ID for: libsndfile's name of it.
        var size: UInt32 = 0
        guard AudioFileGetPropertyInfo(file, kAudioFilePropertyJaqContainerName, &size, nil) == noErr, size > 0 else { return "unknown" }
        var name = [UInt8](repeating: 0, count: Int(size))
        guard AudioFileGetProperty(file, kAudioFilePropertyJaqContainerName, &size, &name) == noErr else { return "unknown" }
        return String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)
    }

    private static func clock(_ seconds: Double) -> String {
        let milliseconds = Int((seconds * 1000).rounded())
        return String(cFormat: "%02d:%02d:%02d.%03d", milliseconds / 3_600_000, milliseconds / 60_000 % 60,
                      milliseconds / 1000 % 60, milliseconds % 1000)
    }
}
