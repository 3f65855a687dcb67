import ArgumentParser
import AudioToolbox
import FoundationEssentials
import Glibc
import Synchronization

/// One input of a render: a file played by its own output queue in offline mode.
final class RenderTrack: @unchecked Sendable {
    let path: String
    let file: AudioFileID
    let format: AudioStreamBasicDescription
    let totalPackets: Int64
    let packetsPerBuffer: UInt32
    /// Queue time (frames at the file's rate) of the file's first frame.
    let startFrame: Int64
    var queue: AudioQueueRef!
    let nextPacket = Mutex<Int64>(0)
    let failure = Mutex<String?>(nil)
    let finished = Atomic<Bool>(false)
    /// Compressed files (MP3, AAC, ALAC...): cookie, buffer size, priming and padding, as jaq play.
    let packetPlayback: PacketPlayback?

    init(path: String, offset: TimeValue) throws {
        self.path = path
        let opened = try PlayableFile(path: path)
        file = opened.id
        format = opened.format
        totalPackets = opened.packetCount
        packetsPerBuffer = opened.packetsPerBuffer(minimumPCMPackets: 1024)
        packetPlayback = PacketPlayback(opened.id, format: opened.format, packetsPerBuffer: packetsPerBuffer)
        startFrame = offset.frames(at: format.mSampleRate)
    }

    /// Frames the file plays.
    var frameCount: Int64 { packetPlayback?.validFrames(packets: totalPackets, format: format) ?? totalPackets }

    /// A buffer for this file's queue: with packet descriptions for compressed files; the
    /// queue gets the file's magic cookie first.
    func allocateBuffer(_ queue: AudioQueueRef, _ buffer: inout AudioQueueBufferRef?) -> OSStatus {
        guard let packets = packetPlayback else {
            return AudioQueueAllocateBuffer(queue, packetsPerBuffer * format.mBytesPerPacket, &buffer)
        }
        if !packets.cookie.isEmpty, buffer == nil {
            let status = AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, packets.cookie, UInt32(packets.cookie.count))
            if status != noErr { return status }
        }
        return AudioQueueAllocateBufferWithPacketDescriptions(queue, packets.bufferBytes, packetsPerBuffer, &buffer)
    }

    deinit { AudioFileClose(file) }

    /// Reads the next packets into `buffer` and enqueues it (the first one at the track's
    /// offset); at the end of the file, Stop(false): the queue plays out and stops.
    func refill(_ buffer: AudioQueueBufferRef) {
        let start = nextPacket.withLock { $0 }
        var packets = UInt32(min(Int64(packetsPerBuffer), max(0, totalPackets - start)))
        var bytes = packets * format.mBytesPerPacket
        var status = noErr
        var trims = (start: 0, end: 0)
        if packets > 0, let packetPlayback {
            let read = packetPlayback.read(file, format: format, into: buffer, from: start, count: packets, totalPackets: totalPackets)
            (packets, trims, status) = (read.packets, (read.trimStart, read.trimEnd), read.status)
            bytes = buffer.pointee.mAudioDataByteSize
        } else if packets > 0 {
            status = AudioFileReadPacketData(file, false, &bytes, nil, start, &packets, buffer.pointee.mAudioData)
        }
        if status != noErr && status != kAudioFileEndOfFileError {
            failure.withLock { $0 = "\(path): read error at packet \(start): \(describe(status, file: true))" }
            packets = 0
        }
        guard packets > 0 else {
            if !finished.exchange(true, ordering: .relaxed) { AudioQueueStop(queue, false) }
            return
        }
        nextPacket.withLock { $0 = start + Int64(packets) }
        buffer.pointee.mAudioDataByteSize = packetPlayback == nil ? packets * format.mBytesPerPacket : bytes
        let descriptions = packetPlayback == nil ? 0 : packets
        var when = AudioTimeStamp()
        when.mFlags = .sampleTimeValid
        when.mSampleTime = Double(startFrame)
        let result = withUnsafePointer(to: &when) { pointer in
            AudioQueueEnqueueBufferWithParameters(queue, buffer, descriptions, descriptions > 0 ? buffer.pointee.mPacketDescriptions : nil,
                                                  UInt32(trims.start), UInt32(trims.end), 0, nil, start == 0 ? pointer : nil, nil)
        }
        if result != noErr { failure.withLock { $0 = "\(path): cannot enqueue: \(describe(result, file: false))" } }
    }
}

private func renderCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    Unmanaged<RenderTrack>.fromOpaque(userData!).takeUnretainedValue().refill(buffer)
}

/// `jaq render`: mixes files offline, through audio queues in offline render mode, into one file.
struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        _superCommandName: "jaq",
        abstract: "Mix files (volume, pan, offsets) offline into one file, through audio queues.",
        discussion: """
            Each file plays through its own audio queue, as `jaq play` plays it, but offline \
            (AudioQueueSetOfflineRenderFormat): no JACK server is needed, and it runs as fast as \
            the machine allows. The mix is the sum of the queues' renders: sample for sample what \
            JACK would mix from the same queues playing in real time.

            Example:
              jaq render -o mix.wav drums.wav bass.wav --volume 2:0.8 --offset 2:1.5
              jaq render -o slow.wav --speed 0.75 --pitch -200 solo.wav  # a tone lower
            """)

    @Argument(help: "Audio files to mix.")
    var files: [String]

    @Option(name: .shortAndLong, help: ArgumentHelp("The file to write, of the type its extension names: .wav, .aiff, .caf, .w64, .rf64, .flac, "
                                                    + ".ogg, .opus, .mp3 (no extension: WAV); see --bits.", valueName: "file"))
    var output: String

    @Flag(name: .long, help: "Replace --output if it exists (without it, jaq render refuses, as jaq record does).")
    var force = false

    @OptionGroup var levels: LevelOptions

    @Option(name: .long, help: ArgumentHelp("Silence before file N (or every file) starts: a time as jaq record --duration reads it "
                                            + "(seconds, m:ss, h:mm:ss, Nf for frames of the file); 2:1:30 is file 2 at 1 min 30 s.",
                                            valueName: "[N:]time"))
    var offset: [String] = []

    @Option(name: .long, help: ArgumentHelp("Sample rate of the mix (default: the first file's).", valueName: "hz"))
    var rate: Double?

    @Option(name: .long, help: ArgumentHelp("Sample format: float (32-bit), 16, 24 or 32 (integer). Default: float; "
                                            + "24 for AIFF and FLAC, 16 for Ogg and MP3 (they hold integers).", valueName: "bits"))
    var bits: String?

    @OptionGroup(title: "Speed and pitch") var timePitchOptions: TimePitchOptions

    @OptionGroup var quietOption: QuietOption

    var timePitch: TimePitchSettings { timePitchOptions.settings() }

    /// The type --output's extension names (none: WAV, as jaq render always wrote).
    var outputType: OutputFileType {
        get throws {
            let name = URL(fileURLWithPath: output).lastPathComponent
            guard name.contains(".") else { return OutputFileType(spelling: "wav")! }
            guard let type = OutputFileType(path: output), !type.holdsPacketsOnly else {
                throw ValidationError("--output \(output): jaq render writes .wav, .aiff, .caf, .w64, .rf64, .flac, .ogg, .opus or .mp3 "
                                      + "(jaq convert makes the others from it)")
            }
            return type
        }
    }

    /// --bits, or what the output type holds by default.
    var sampleFormat: String {
        if let bits { return bits }
        guard let type = try? outputType, type.holdsIntegersOnly else { return "float" }
        return [kAudioFileFLACType, kAudioFileAIFFType].contains(type.id) ? "24" : "16"
    }

    func validate() throws {
        if files.isEmpty { throw ValidationError("name at least one file to mix") }
        if let bits, !["float", "16", "24", "32"].contains(bits) { throw ValidationError("--bits takes float, 16, 24 or 32") }
        let type = try outputType
        if type.holdsIntegersOnly, let bits, bits == "float" || (bits == "32" && type.id != kAudioFileAIFFType) {
            throw ValidationError("--bits \(bits): \(type.name) holds \(type.id == kAudioFileAIFFType ? "integers (.aifc holds float)" : "16- or 24-bit integers")")
        }
        if let rate, !(rate >= 1000 && rate <= 768_000) { throw ValidationError("--rate \(rate): 1000...768000 Hz") }
        try timePitchOptions.validate(oldRate: nil, oldRateName: "")
    }

    func run() throws {
        try runReportingFailure("jaq render", quiet: quietOption.quiet) { try render() }
    }

    /// Values of a per-file option ("[N:]value", N the file's number from 1; without it, every
    /// file not named otherwise): file index (0-based) → value. `parse` reads a value (nil: not
    /// one), `why` says what was wrong with the text. A first field followed by another is the
    /// file's number, so "2:1:30" is file 2 at 1:30 and "1:30" file 1 at 30 s.
    private func perFile<Value>(_ entries: [String], _ name: String, parse: (String) -> Value?,
                                why: (String) -> String) throws -> [Int: Value] {
        var result: [Int: Value] = [:]
        for entry in entries {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            let index = parts.count == 2 ? Int(parts[0]) : nil
            if parts.count == 2 && index == nil {
                throw CLIError("--\(name) \(entry): [N:]value, N the file's number", exitCode: CLIError.usage)
            }
            let text = parts.last ?? ""
            guard let value = parse(text) else { throw CLIError("--\(name) \(entry): \(why(text))", exitCode: CLIError.usage) }
            if let index {
                guard (1...files.count).contains(index) else { throw CLIError("--\(name) \(entry): there is no file \(index)", exitCode: CLIError.usage) }
                result[index - 1] = value
            } else {
                for i in files.indices where result[i] == nil { result[i] = value }
            }
        }
        return result
    }

    /// A per-file level (--volume, --pan) in `range`.
    private func values(_ entries: [String], _ name: String, _ range: ClosedRange<Double>) throws -> [Int: Double] {
        try perFile(entries, name, parse: { Double($0).flatMap { range.contains($0) ? $0 : nil } }, why: { _ in "not a value in \(range)" })
    }

    /// `--offset [N:]time`: a time as every time option reads it, at most a day.
    private func offsetValues() throws -> [Int: TimeValue] {
        try perFile(offset, "offset", parse: { text in (try? TimeValue.parse(text)).flatMap { $0.seconds(at: 48000) <= 86_400 ? $0 : nil } },
                    why: { text in (try? TimeValue.parse(text)) != nil ? "at most a day" : TimeSpec.problem(text) })
    }

    private func render() throws {
        let target = URL(fileURLWithPath: output).standardizedFileURL.resolvingSymlinksInPath().path
        if files.contains(where: { URL(fileURLWithPath: $0).standardizedFileURL.resolvingSymlinksInPath().path == target }) {
            throw CLIError("\(output): is also one of the files to mix; write the mix elsewhere")
        }
        let volumes = try values(levels.volume, "volume", 0...1)
        let pans = try values(levels.pan, "pan", -1...1)
        let offsets = try offsetValues()
        let tracks = try files.enumerated().map { try RenderTrack(path: $0.element, offset: offsets[$0.offset] ?? TimeValue(seconds: 0)) }
        let mixRate = rate ?? tracks[0].format.mSampleRate
        // Mono queues have a left/right pair of ports: the mix is at least stereo.
        let channels = max(2, tracks.map { Int($0.format.mChannelsPerFrame) }.max() ?? 2)
        let chunk = 4096

        // No server: each queue runs on a clock of its own, advanced by its renders.
        let driver = AudioQueueDevices.offline(sampleRate: mixRate)
        var renderFormat = AudioStreamBasicDescription(
            mSampleRate: mixRate, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked, mBytesPerPacket: UInt32(4 * channels),
            mFramesPerPacket: 1, mBytesPerFrame: UInt32(4 * channels), mChannelsPerFrame: UInt32(channels),
            mBitsPerChannel: 32, mReserved: 0)
        var captures: [AudioQueueBufferRef] = []
        defer { for track in tracks where track.queue != nil { AudioQueueDispose(track.queue, true) } }
        for (i, track) in tracks.enumerated() {
            var format = track.format
            var queue: AudioQueueRef?
            let user = Unmanaged.passUnretained(track).toOpaque()
            let status = AudioQueueNewOutput(&format, renderCallback, user, nil, nil, 0, &queue, device: driver)
            guard status == noErr, let queue else { throw CLIError("\(track.path): \(describe(status, file: false))") }
            track.queue = queue
            if let value = volumes[i] { AudioQueueSetParameter(queue, kAudioQueueParam_Volume, Float(value)) }
            if let value = pans[i] { AudioQueueSetParameter(queue, kAudioQueueParam_Pan, Float(value)) }
            try timePitch.apply(to: queue, path: track.path)
            for _ in 0..<3 {
                var buffer: AudioQueueBufferRef?
                let result = track.allocateBuffer(queue, &buffer)
                guard result == noErr, let buffer else { throw CLIError("\(track.path): \(describe(result, file: false))") }
                track.refill(buffer)
            }
            var capture: AudioQueueBufferRef?
            var result = AudioQueueAllocateBuffer(queue, UInt32(chunk * channels * 4), &capture)
            guard result == noErr, let capture else { throw CLIError("\(track.path): \(describe(result, file: false))") }
            captures.append(capture)
            result = AudioQueueSetOfflineRenderFormat(queue, &renderFormat, nil)
            guard result == noErr else { throw CLIError("\(track.path): cannot render offline: \(describe(result, file: false))") }
            result = AudioQueueStart(queue, nil)
            guard result == noErr else { throw CLIError("\(track.path): cannot start: \(describe(result, file: false))") }
            var time = AudioTimeStamp()
            time.mFlags = .sampleTimeValid
            result = AudioQueueOfflineRender(queue, &time, capture, 0)
            guard result == noErr else { throw CLIError("\(track.path): cannot render offline: \(describe(result, file: false))") }
        }

        // After every input and value is checked: the one error left to report is this one.
        if FileManager.default.fileExists(atPath: output) && !force {
            throw CLIError("\(output): exists (--force replaces it)")
        }
        let out = try MixFile(path: output, type: try outputType, bits: sampleFormat, sampleRate: mixRate, channels: channels, frames: chunk)
        // Each track renders until its queue, stopped at the end of its file, has played out
        // (a render then returns fewer frames than asked): the mix ends with its longest track,
        // offsets, rate conversion and the time/pitch unit's tail included, to the frame.
        var ended = [Bool](repeating: false, count: tracks.count)
        // A file at the mix's rate, with no time/pitch unit, plays exactly its valid frames after
        // its offset: its queue's output is cut there. (jaq's own ALAC takes end on a whole 4096-
        // frame packet whose decode runs past the take's last frame; the file's packet table
        // says where the take ends.)
        let limits = tracks.map { track -> Int? in
            guard !timePitch.isActive, track.format.mSampleRate == mixRate else { return nil }
            return Int(track.startFrame + track.frameCount)
        }
        var mix = [Float](repeating: 0, count: chunk * channels)
        var written = 0
        while ended.contains(false) {
            for i in mix.indices { mix[i] = 0 }
            var longest = 0
            for (index, (track, capture)) in zip(tracks, captures).enumerated() where !ended[index] {
                var time = AudioTimeStamp()
                time.mFlags = .sampleTimeValid
                time.mSampleTime = Double(written)
                let status = AudioQueueOfflineRender(track.queue, &time, capture, UInt32(chunk))
                guard status == noErr else { throw CLIError("\(track.path): offline render failed: \(describe(status, file: false))") }
                if let failure = track.failure.withLock({ $0 }) { throw CLIError(failure) }
                var frames = Int(capture.pointee.mAudioDataByteSize) / (channels * 4)
                if let limit = limits[index], written + frames >= limit {
                    frames = max(0, limit - written)
                    ended[index] = true
                }
                let samples = capture.pointee.mAudioData.assumingMemoryBound(to: Float.self)
                for i in 0..<(frames * channels) { mix[i] += samples[i] }
                longest = max(longest, frames)
                if frames < chunk { ended[index] = true }
            }
            if longest > 0 { try out.write(mix, frames: longest) }
            written += longest
        }
        try out.close()
        Log.info("\(output): \(written) frames, \(channels) channels at \(Int(mixRate)) Hz from \(files.count) file(s)")
    }
}

/// The file `jaq render` writes: a WAVE (or AIFF, CAF, FLAC...) file through Audio File Services, the float mix
/// converted to its sample format by an AudioConverter (integers rounded and clipped: a
/// 16-bit file at unity gain comes out with the samples it went in with).
private final class MixFile {
    let path: String
    let file: AudioFileID
    let converter: AudioConverterRef?
    let mixBytesPerFrame: Int
    let fileBytesPerFrame: Int
    /// The converted samples of one chunk.
    private var converted: [UInt8]
    private var packet: Int64 = 0

    /// Creates (or replaces) `path`, a file of `type`, for `bits` ("float", "16", "24", "32") samples.
    init(path: String, type: OutputFileType, bits: String, sampleRate: Double, channels: Int, frames: Int) throws {
        self.path = path
        let isFloat = bits == "float"
        let width = isFloat ? 4 : Int(bits)! / 8
        func format(float: Bool, width: Int) -> AudioStreamBasicDescription {
            AudioStreamBasicDescription(
                mSampleRate: sampleRate, mFormatID: kAudioFormatLinearPCM,
                mFormatFlags: (float ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger) | kAudioFormatFlagIsPacked
                    | (type.isBigEndian ? kAudioFormatFlagIsBigEndian : 0),
                mBytesPerPacket: UInt32(width * channels), mFramesPerPacket: 1, mBytesPerFrame: UInt32(width * channels),
                mChannelsPerFrame: UInt32(channels), mBitsPerChannel: UInt32(width * 8), mReserved: 0)
        }
        var mixFormat = format(float: true, width: 4)
        mixFormat.mFormatFlags &= ~kAudioFormatFlagIsBigEndian
        var fileFormat = format(float: isFloat, width: width)
        mixBytesPerFrame = 4 * channels
        fileBytesPerFrame = width * channels
        var made: AudioFileID?
        let status = AudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, type.id, &fileFormat, .eraseFile, &made)
        guard status == noErr, let made else { throw CLIError("\(path): cannot create it: \(describe(status, file: false))") }
        file = made
        let direct = isFloat && !type.isBigEndian
        if direct {
            converter = nil
        } else {
            var converter: AudioConverterRef?
            let result = AudioConverterNew(&mixFormat, &fileFormat, &converter)
            guard result == noErr, let converter else {
                AudioFileClose(made)
                throw CLIError("\(path): cannot convert to \(bits)-bit samples: \(describe(result, file: false))")
            }
            self.converter = converter
        }
        converted = [UInt8](repeating: 0, count: direct ? 0 : frames * fileBytesPerFrame)
    }

    deinit {
        if let converter { AudioConverterDispose(converter) }
    }

    /// Appends the first `frames` frames of `mix` (interleaved float).
    func write(_ mix: [Float], frames: Int) throws {
        var packets = UInt32(frames)
        let status: OSStatus = mix.withUnsafeBytes { floats in
            guard let converter else {
                return AudioFileWritePackets(file, false, UInt32(frames * mixBytesPerFrame), nil, packet, &packets, floats.baseAddress!)
            }
            return converted.withUnsafeMutableBytes { bytes in
                var size = UInt32(frames * fileBytesPerFrame)
                let result = AudioConverterConvertBuffer(converter, UInt32(frames * mixBytesPerFrame), floats.baseAddress!, &size, bytes.baseAddress!)
                guard result == noErr else { return result }
                return AudioFileWritePackets(file, false, size, nil, packet, &packets, bytes.baseAddress!)
            }
        }
        guard status == noErr, packets == UInt32(frames) else {
            throw CLIError("\(path): write failed at frame \(packet): \(describe(status == noErr ? ioErr : status, file: false))")
        }
        packet += Int64(frames)
    }

    /// Completes the header and closes the file.
    func close() throws {
        let status = AudioFileClose(file)
        guard status == noErr else { throw CLIError("\(path): cannot complete it: \(describe(status, file: false))") }
    }
}
