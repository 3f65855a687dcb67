import AudioToolbox
import Foundation
import QueueCore

/// What the Audio File Services guides do with a file, done to one file: open it, read every
/// property they read (with the size GetPropertyInfo gives, and with one byte too few), read all
/// of its packets in order and some out of order, and, for the types jaq also writes, open it
/// read-write and write packets over its start.
///
/// Each result is one `name=status` word of the line `walk` prints, so the tests can assert
/// what a caller would see. Nothing here may trap: a result code is the only acceptable outcome.
struct FileWalk {
    /// How many packets one read asks for, and the most a walk reads in all (a hostile header
    /// may declare 2^62 packets; the reads must still end).
    static let packetsPerRead: UInt32 = 494
    static let packetLimit: Int64 = 1 << 22

    private(set) var results: [(String, String)] = []

    mutating func note(_ name: String, _ value: String) { results.append((name, value)) }
    mutating func note(_ name: String, _ status: OSStatus) { note(name, fourCharacterCode(status, quoted: false)) }

    var line: String { results.map { "\($0.0)=\($0.1)" }.joined(separator: " ") }

    /// Apple's result codes for Audio File Services, as `fourCharacterCode(_:quoted: false)` writes them.
    static let resultCodes: Set<String> = [
        "0", "wht?", "typ?", "fmt?", "pty?", "!siz", "prm?", "optm", "chk?", "off?", "pck?", "dep?", "dta?", "op??",
        "!pth", "-38", "-39", "-40", "-43", "-48", "-54", "-50", "-36", "-34", "-42", "-108",
    ]
    /// The words that carry values rather than result codes.
    static let valueNames: Set<String> = ["pcnt", "bcnt", "psze", "pkub", "brat", "edur", "doff", "packets", "vbr"]

    /// What a caller could not rely on: a word that is neither a result code nor a value, and
    /// sizes that disagree (AudioDataByteCount ≠ packets × MaximumPacketSize).
    var violations: [String] {
        var found = results.filter { !Self.resultCodes.contains($0.1) && !(Self.valueNames.contains($0.0) && Double($0.1) != nil) }
            .map { "\($0.0)=\($0.1)" }
        let values = Dictionary(results, uniquingKeysWith: { first, _ in first })
        if values["vbr"] == nil, let packets = values["pcnt"].flatMap({ Int64($0) }), let size = values["psze"].flatMap({ Int64($0) }),
           let bytes = values["bcnt"].flatMap({ Int64($0) }), packets.multipliedReportingOverflow(by: size) != (bytes, false) {
            found.append("bcnt=\(bytes) for \(packets) packets of \(size) bytes")
        }
        return found
    }

    /// Walks the file at `path`; `writes` also opens it read-write and overwrites packets.
    mutating func walk(_ path: String, writes: Bool) {
        let url = URL(fileURLWithPath: path)
        var file: AudioFileID?
        let status = AudioFileOpenURL(url, .readPermission, 0, &file)
        note("open", status)
        guard status == noErr, let file else { return }
        readProperties(file)
        readPackets(file)
        note("close", AudioFileClose(file))
        if writes { writePackets(url) }
    }

    static let properties: [(String, AudioFilePropertyID)] = [
        ("ffmt", kAudioFilePropertyFileFormat), ("dfmt", kAudioFilePropertyDataFormat),
        ("pcnt", kAudioFilePropertyAudioDataPacketCount), ("bcnt", kAudioFilePropertyAudioDataByteCount),
        ("psze", kAudioFilePropertyMaximumPacketSize), ("pkub", kAudioFilePropertyPacketSizeUpperBound),
        ("mgic", kAudioFilePropertyMagicCookieData), ("cmap", kAudioFilePropertyChannelLayout),
        ("brat", kAudioFilePropertyBitRate), ("edur", kAudioFilePropertyEstimatedDuration),
        ("doff", kAudioFilePropertyDataOffset), ("sbtd", kAudioFilePropertySourceBitDepth),
        ("optm", kAudioFilePropertyIsOptimized), ("dszu", kAudioFilePropertyDeferSizeUpdates),
        ("pnfo", kAudioFilePropertyPacketTableInfo),
    ]

    private mutating func readProperties(_ file: AudioFileID) {
        for (name, id) in Self.properties {
            var size: UInt32 = 0
            var writable: UInt32 = 0
            let info = AudioFileGetPropertyInfo(file, id, &size, &writable)
            guard info == noErr else { note(name, info); continue }
            guard size <= 1 << 20 else { note(name, "size\(size)"); continue }
            var bytes = [UInt8](repeating: 0, count: Int(size) + 1)
            var got = size
            let status = bytes.withUnsafeMutableBytes { AudioFileGetProperty(file, id, &got, $0.baseAddress!) }
            note(name, status == noErr ? valueText(id, bytes, size: got) : fourCharacterCode(status, quoted: false))
            if size > 0 {
                var short = size - 1
                let tooSmall = bytes.withUnsafeMutableBytes { AudioFileGetProperty(file, id, &short, $0.baseAddress!) }
                note(name + "-short", tooSmall)
            }
        }
        for (name, packet) in [("pkby", Int64(7)), ("pkby-max", Int64.max), ("pkby-neg", Int64.min)] {
            var translation = AudioBytePacketTranslation(mByte: 0, mPacket: packet, mByteOffsetInPacket: 0, mFlags: [])
            var size = UInt32(MemoryLayout<AudioBytePacketTranslation>.size)
            note(name, AudioFileGetProperty(file, kAudioFilePropertyPacketToByte, &size, &translation))
        }
        for (name, byte) in [("bypk", Int64(7)), ("bypk-max", Int64.max), ("bypk-neg", Int64.min)] {
            var translation = AudioBytePacketTranslation(mByte: byte, mPacket: 0, mByteOffsetInPacket: 0, mFlags: [])
            var size = UInt32(MemoryLayout<AudioBytePacketTranslation>.size)
            note(name, AudioFileGetProperty(file, kAudioFilePropertyByteToPacket, &size, &translation))
        }
    }

    /// The value of a property, for the properties whose value a test checks.
    private func valueText(_ id: AudioFilePropertyID, _ bytes: [UInt8], size: UInt32) -> String {
        func load<T>(_: T.Type) -> T? {
            size == MemoryLayout<T>.size ? bytes.withUnsafeBytes { $0.loadUnaligned(as: T.self) } : nil
        }
        switch id {
        case kAudioFilePropertyAudioDataPacketCount, kAudioFilePropertyAudioDataByteCount, kAudioFilePropertyDataOffset:
            return load(Int64.self).map { String($0) } ?? "size\(size)"
        case kAudioFilePropertyMaximumPacketSize, kAudioFilePropertyPacketSizeUpperBound, kAudioFilePropertyBitRate:
            return load(UInt32.self).map { String($0) } ?? "size\(size)"
        case kAudioFilePropertyEstimatedDuration:
            return load(Float64.self).map { String($0) } ?? "size\(size)"
        default:
            return "0"
        }
    }

    private mutating func readPackets(_ file: AudioFileID) {
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        guard AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &size, &format) == noErr else { return }
        // Packets of variable size: as the guide's player sizes its buffers, by the largest
        // packet (bounded: a hostile header may claim any size).
        var largest: UInt32 = 0
        size = 4
        if format.mBytesPerPacket == 0 { _ = AudioFileGetProperty(file, kAudioFilePropertyMaximumPacketSize, &size, &largest) }
        let packetBytes = Int(format.mBytesPerPacket > 0 ? format.mBytesPerPacket : min(max(largest, 1), 1 << 16))
        var buffer = [UInt8](repeating: 0, count: Int(Self.packetsPerRead) * packetBytes)
        var descriptions = [AudioStreamPacketDescription](repeating: .init(), count: Int(Self.packetsPerRead))
        // In order, as a player reads, until the end or the limit.
        var packet: Int64 = 0
        var last: OSStatus = noErr
        while packet < Self.packetLimit {
            var bytes = UInt32(buffer.count)
            var packets = Self.packetsPerRead
            last = buffer.withUnsafeMutableBytes {
                AudioFileReadPacketData(file, false, &bytes, &descriptions, packet, &packets, $0.baseAddress!)
            }
            packet += Int64(packets)
            if last != noErr || packets == 0 { break }
        }
        if format.mBytesPerPacket == 0 { note("vbr", "1") }
        note("read", fourCharacterCode(last, quoted: false))
        note("packets", String(packet))
        // Out of order: backwards from the end, then at 610 (where crash-021463.ogg crashed in sf_seek).
        var packetCount: Int64 = 0
        size = 8
        _ = AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &packetCount)
        for (name, start) in [("seek-end", max(packetCount - 3, 0)), ("seek-mid", packetCount / 2), ("seek-610", 610),
                              ("seek-0", 0), ("seek-past", packetCount &+ 100), ("seek-neg", -1)] {
            var bytes = UInt32(buffer.count)
            var packets = Self.packetsPerRead
            let status = buffer.withUnsafeMutableBytes {
                AudioFileReadPacketData(file, false, &bytes, &descriptions, start, &packets, $0.baseAddress!)
            }
            note(name, status)
        }
        var bytes = UInt32(min(buffer.count, 4096))
        note("rbytes", buffer.withUnsafeMutableBytes { AudioFileReadBytes(file, false, 3, &bytes, $0.baseAddress!) })
    }

    /// Opens the file read-write and writes three packets at 0 and three at the end.
    private mutating func writePackets(_ url: URL) {
        var file: AudioFileID?
        let status = AudioFileOpenURL(url, .readWritePermission, 0, &file)
        note("open-rw", status)
        guard status == noErr, let file else { return }
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        if AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &size, &format) == noErr, format.mBytesPerPacket > 0,
           format.mBytesPerPacket <= 1 << 16 {
            let bytes = [UInt8](repeating: 0x11, count: 3 * Int(format.mBytesPerPacket))
            var packets: UInt32 = 3
            note("write-0", bytes.withUnsafeBytes {
                AudioFileWritePackets(file, false, UInt32($0.count), nil, 0, &packets, $0.baseAddress!)
            })
            var end: Int64 = 0
            size = 8
            _ = AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &end)
            packets = 3
            note("write-end", bytes.withUnsafeBytes {
                AudioFileWritePackets(file, false, UInt32($0.count), nil, end, &packets, $0.baseAddress!)
            })
        }
        note("close-rw", AudioFileClose(file))
    }
}
