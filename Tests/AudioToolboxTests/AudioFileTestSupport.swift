import AudioToolbox
import Foundation
import Testing
import JackTestSupport
import QueueCore

/// A sample encoding of an ASBD, as the tests name them.
enum Encoding: String, CaseIterable, Sendable {
    case s8, u8, s16, s24, s32, f32, f64, ulaw, alaw

    var bytesPerSample: Int {
        switch self {
        case .s8, .u8, .ulaw, .alaw: 1
        case .s16: 2
        case .s24: 3
        case .s32, .f32: 4
        case .f64: 8
        }
    }

    var bits: Int? {
        switch self {
        case .s8: 8
        case .s16: 16
        case .s24: 24
        case .s32: 32
        default: nil
        }
    }

    /// The ASBD Apple code would write for this encoding.
    func format(channels: Int, rate: Double = 44100, bigEndian: Bool) -> AudioStreamBasicDescription {
        var formatID = kAudioFormatLinearPCM
        var flags: AudioFormatFlags = kAudioFormatFlagIsPacked
        switch self {
        case .s8, .s16, .s24, .s32: flags |= kAudioFormatFlagIsSignedInteger
        case .u8: break
        case .f32, .f64: flags |= kAudioFormatFlagIsFloat
        case .ulaw: formatID = kAudioFormatULaw; flags = 0
        case .alaw: formatID = kAudioFormatALaw; flags = 0
        }
        if bigEndian, self != .ulaw, self != .alaw { flags |= kAudioFormatFlagIsBigEndian }
        let bytes = UInt32(bytesPerSample * channels)
        return AudioStreamBasicDescription(
            mSampleRate: rate, mFormatID: formatID, mFormatFlags: flags, mBytesPerPacket: bytes, mFramesPerPacket: 1,
            mBytesPerFrame: bytes, mChannelsPerFrame: UInt32(channels), mBitsPerChannel: UInt32(bytesPerSample * 8), mReserved: 0)
    }

    /// A deterministic test signal in this encoding: the extremes, zero and -1 first, then a
    /// sine per channel (each at its own frequency) with a little pseudo-random noise. Float
    /// signals include a value beyond full scale (1.5 or -1.25) unless `overRange` is false.
    func signal(frames: Int, channels: Int, bigEndian: Bool, overRange: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(frames * channels * bytesPerSample)
        var noise: UInt32 = 0x1234_5678
        for frame in 0..<frames {
            for channel in 0..<channels {
                noise = noise &* 1_664_525 &+ 1_013_904_223
                let sine = sin(Double(frame) * 0.031 * Double(channel + 1) + Double(channel))
                let jitter = Double(Int32(bitPattern: noise) >> 20) / 2048.0 * 0.01
                let unit = frame == 0 ? 1.0 : frame == 1 ? -1.0 : frame == 2 ? 0 : 0.95 * sine + jitter
                bytes += sample(unit, frame: frame, noise: noise, bigEndian: bigEndian, overRange: overRange)
            }
        }
        return bytes
    }

    private func sample(_ unit: Double, frame: Int, noise: UInt32, bigEndian: Bool, overRange: Bool) -> [UInt8] {
        func integer(_ bits: Int) -> [UInt8] {
            let maxValue = Double((Int64(1) << (bits - 1)) - 1)
            var value = unit >= 1 ? Int64(maxValue) : unit <= -1 ? -Int64(maxValue) - 1 : Int64((unit * maxValue).rounded())
            if frame == 3 { value = -1 }
            let raw = UInt64(bitPattern: value)
            let width = bits / 8
            return (0..<width).map { UInt8(truncatingIfNeeded: raw >> UInt64(8 * (bigEndian ? width - 1 - $0 : $0))) }
        }
        switch self {
        case .s8: return integer(8)
        case .s16: return integer(16)
        case .s24: return integer(24)
        case .s32: return integer(32)
        case .u8: return [UInt8(truncatingIfNeeded: Int(integer(8)[0] ^ 0x80))]
        case .f32:
            let bits = Float(frame == 4 && overRange ? 1.5 : unit).bitPattern
            return (0..<4).map { UInt8(truncatingIfNeeded: bits >> UInt32(8 * (bigEndian ? 3 - $0 : $0))) }
        case .f64:
            let bits = (frame == 4 && overRange ? -1.25 : unit).bitPattern
            return (0..<8).map { UInt8(truncatingIfNeeded: bits >> UInt64(8 * (bigEndian ? 7 - $0 : $0))) }
        case .ulaw, .alaw:
            // Every byte value appears.
            return [UInt8(truncatingIfNeeded: Int(noise >> 24) &+ frame)]
        }
    }
}

/// Fails the test with the result code's name when `status` is not `expected`.
func expectStatus(_ status: OSStatus, _ expected: OSStatus = noErr, _ what: @autoclosure () -> String = "",
                  sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(status == expected, "\(what()): got \(fourCharacterCode(status)), expected \(fourCharacterCode(expected))", sourceLocation: sourceLocation)
}

/// Typed helpers over the C-style API, for tests.
enum AF {
    static func create(_ url: URL, _ type: AudioFileTypeID, _ format: AudioStreamBasicDescription,
                       flags: AudioFileFlags = .eraseFile) -> (OSStatus, AudioFileID?) {
        var format = format
        var file: AudioFileID?
        let status = AudioFileCreateWithURL(url as CFURL, type, &format, flags, &file)
        return (status, file)
    }

    /// Writes `frames` frames of the test signal into a new file and closes it.
    /// - Returns: the signal's bytes.
    @discardableResult
    static func makeFile(_ url: URL, _ type: AudioFileTypeID, _ encoding: Encoding, channels: Int, bigEndian: Bool,
                         frames: Int, rate: Double = 44100, overRange: Bool = true,
                         sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
        let format = encoding.format(channels: channels, rate: rate, bigEndian: bigEndian)
        let signal = encoding.signal(frames: frames, channels: channels, bigEndian: bigEndian, overRange: overRange)
        let (status, file) = create(url, type, format)
        expectStatus(status, noErr, "create \(url.lastPathComponent)", sourceLocation: sourceLocation)
        guard let file else { return signal }
        expectStatus(write(file, signal, at: 0, bytesPerPacket: Int(format.mBytesPerPacket)).0, noErr, "write", sourceLocation: sourceLocation)
        expectStatus(AudioFileClose(file), noErr, "close", sourceLocation: sourceLocation)
        return signal
    }

    static func open(_ url: URL, _ permissions: AudioFilePermissions = .readPermission) -> (OSStatus, AudioFileID?) {
        var file: AudioFileID?
        let status = AudioFileOpenURL(url as CFURL, permissions, 0, &file)
        return (status, file)
    }

    static func write(_ file: AudioFileID?, _ bytes: [UInt8], at packet: Int64, bytesPerPacket: Int) -> (OSStatus, UInt32) {
        var packets = UInt32(bytes.count / bytesPerPacket)
        let status = bytes.withUnsafeBytes {
            AudioFileWritePackets(file!, false, UInt32($0.count), nil, packet, &packets, $0.baseAddress!)
        }
        return (status, packets)
    }

    /// Reads `packets` packets from `start` with ReadPacketData.
    static func read(_ file: AudioFileID?, from start: Int64, packets: Int, bytesPerPacket: Int) -> (OSStatus, [UInt8]) {
        var buffer = [UInt8](repeating: 0xA5, count: max(packets * bytesPerPacket, 1))
        var byteCount = UInt32(packets * bytesPerPacket)
        var packetCount = UInt32(packets)
        let status = buffer.withUnsafeMutableBytes {
            AudioFileReadPacketData(file!, false, &byteCount, nil, start, &packetCount, $0.baseAddress!)
        }
        #expect(Int(byteCount) == Int(packetCount) * bytesPerPacket)
        return (status, Array(buffer.prefix(Int(byteCount))))
    }

    static func property<Value: BitwiseCopyable>(_ file: AudioFileID?, _ id: AudioFilePropertyID, _: Value.Type) -> (OSStatus, Value?) {
        var size = UInt32(MemoryLayout<Value>.size)
        let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        defer { value.deallocate() }
        let status = AudioFileGetProperty(file!, id, &size, value)
        return (status, status == noErr && size == MemoryLayout<Value>.size ? value.pointee : nil)
    }

    static func dataFormat(_ file: AudioFileID?) -> AudioStreamBasicDescription? {
        property(file, kAudioFilePropertyDataFormat, AudioStreamBasicDescription.self).1
    }
}

extension AudioStreamBasicDescription {
    /// Field-by-field equality (the C struct has no Equatable).
    func matches(_ other: AudioStreamBasicDescription) -> Bool {
        mSampleRate == other.mSampleRate && mFormatID == other.mFormatID && mFormatFlags == other.mFormatFlags
            && mBytesPerPacket == other.mBytesPerPacket && mFramesPerPacket == other.mFramesPerPacket
            && mBytesPerFrame == other.mBytesPerFrame && mChannelsPerFrame == other.mChannelsPerFrame
            && mBitsPerChannel == other.mBitsPerChannel
    }
}

/// Runs a command line tool and returns its exit status and output.
@discardableResult
func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, stdout: Data, stderr: String) {
    let ending = try runEnding(executable, arguments, environment: environment)
    return (ending.status, ending.stdout, ending.stderr)
}

/// `run` for a referee (sox, ffmpeg, ffprobe): a run that dies of a signal is run again, up to
/// `refereeAttempts` runs, then `RefereeCrashed` names the tool (a known issue in suites with
/// `.refereeCrashesAreKnownIssues`). Not for jaq's own programs: their crash is jaq's.
func runReferee(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws
    -> (status: Int32, stdout: Data, stderr: String) {
    let tool = URL(fileURLWithPath: executable).lastPathComponent
    for attempt in 1...refereeAttempts {
        let ending = try runEnding(executable, arguments, environment: environment)
        guard let signal = ending.signal else { return (ending.status, ending.stdout, ending.stderr) }
        print("\(tool) died of \(signalName(signal)) (run \(attempt) of \(refereeAttempts)): \(ending.stderr.suffix(300))")
        if attempt == refereeAttempts {
            throw RefereeCrashed(tool: tool, signal: signal, attempts: attempt, output: ending.stderr)
        }
    }
    fatalError("unreachable")
}

/// `run`, with the signal that killed the tool (nil when it exited).
private func runEnding(_ executable: String, _ arguments: [String], environment: [String: String]?) throws
    -> (status: Int32, stdout: Data, stderr: String, signal: Int32?) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    // Output goes to files, so that neither stream can block the tool on a full pipe.
    let scratch = try Scratch()
    _ = FileManager.default.createFile(atPath: scratch.path("out"), contents: nil)
    _ = FileManager.default.createFile(atPath: scratch.path("err"), contents: nil)
    let out = try FileHandle(forWritingTo: scratch.url("out")), err = try FileHandle(forWritingTo: scratch.url("err"))
    process.standardOutput = out
    process.standardError = err
    try process.run()
    process.waitUntilExit()
    try out.close()
    try err.close()
    let stdout = try Data(contentsOf: scratch.url("out"))
    let stderr = String(decoding: try Data(contentsOf: scratch.url("err")), as: UTF8.self)
    return (process.terminationStatus, stdout, stderr,
            process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil)
}

/// Decodes packed data described by `format` to left-justified 32-bit samples, the way
/// `sox ... -t raw -e signed-integer -b 32` prints them (floats scaled by 2³¹ and clipped;
/// µ-law and A-law through the G.711 tables to 16 bits).
func int32Samples(_ bytes: [UInt8], _ format: AudioStreamBasicDescription) -> [Int32] {
    let width = Int(format.mBitsPerChannel) / 8
    let bigEndian = format.mFormatFlags & kAudioFormatFlagIsBigEndian != 0
    let isFloat = format.mFormatFlags & kAudioFormatFlagIsFloat != 0
    let isSigned = format.mFormatFlags & kAudioFormatFlagIsSignedInteger != 0
    return stride(from: 0, to: bytes.count - width + 1, by: width).map { offset in
        var raw: UInt64 = 0
        for byte in 0..<width {
            raw |= UInt64(bytes[offset + byte]) << UInt64(8 * (bigEndian ? width - 1 - byte : byte))
        }
        switch format.mFormatID {
        case kAudioFormatULaw: return Int32(g711ULaw(UInt8(raw))) << 16
        case kAudioFormatALaw: return Int32(g711ALaw(UInt8(raw))) << 16
        default: break
        }
        if isFloat {
            let value = width == 4 ? Double(Float(bitPattern: UInt32(raw))) : Double(bitPattern: raw)
            return Int32(clamping: Int64((value * 2_147_483_648.0).rounded()))
        }
        if !isSigned { return Int32(Int(raw) - 128) << 24 }
        return Int32(truncatingIfNeeded: (raw << UInt64(64 - 8 * width)) >> 32)
    }
}

/// G.711 µ-law to 16-bit linear.
func g711ULaw(_ byte: UInt8) -> Int16 {
    let value = ~byte
    var magnitude = (Int(value & 0x0F) << 3) + 0x84
    magnitude <<= Int(value & 0x70) >> 4
    return Int16(value & 0x80 != 0 ? 0x84 - magnitude : magnitude - 0x84)
}

/// G.711 A-law to 16-bit linear.
func g711ALaw(_ byte: UInt8) -> Int16 {
    let value = byte ^ 0x55
    var magnitude = Int(value & 0x0F) << 4
    let segment = Int(value & 0x70) >> 4
    switch segment {
    case 0: magnitude += 8
    case 1: magnitude += 0x108
    default: magnitude = (magnitude + 0x108) << (segment - 1)
    }
    return Int16(value & 0x80 != 0 ? magnitude : -magnitude)
}
