import AudioToolbox
import Foundation
import Testing
import JackTestSupport
import RefereeTesting

/// What the callbacks of one AudioFileStream saw.
final class StreamCapture {
    /// The properties the listener heard of, in order.
    var properties: [AudioFileStreamPropertyID] = []
    var packets: [[UInt8]] = []
    var descriptions: [AudioStreamPacketDescription] = []
    var callbacks = 0
    /// Packets callbacks with NULL descriptions.
    var callbacksWithoutDescriptions = 0
    /// Callbacks whose descriptions reached outside the bytes given.
    var descriptionsOutside = 0
    /// The data format read inside the listener on ReadyToProducePackets.
    var formatAtReady: AudioStreamBasicDescription?
    var stream: AudioFileStreamID?
}

/// A stream's properties once parsed, compared between feeds.
struct StreamProperties: Equatable, CustomStringConvertible {
    var fileFormat: UInt32?
    var format: [Double]
    var cookie: [UInt8]?
    var byteCount: UInt64?
    var packetCount: UInt64?
    var dataOffset: Int64?
    var maximumPacketSize: UInt32?
    var upperBound: UInt32?
    var packetTable: [Int64]?
    var bitRate: UInt32?
    var layoutTag: UInt32?
    var formatList: Int?
    var description: String {
        "type \(fileFormat.map { fourCharacterCode($0) } ?? "-") format \(format) cookie \(cookie?.count ?? -1) bytes \(String(describing: byteCount)) "
            + "packets \(String(describing: packetCount)) offset \(String(describing: dataOffset)) max \(String(describing: maximumPacketSize)) "
            + "bound \(String(describing: upperBound)) table \(String(describing: packetTable)) rate \(String(describing: bitRate))"
    }
}

enum AFS {
    static let listener: AudioFileStream_PropertyListenerProc = { client, stream, id, _ in
        let capture = Unmanaged<StreamCapture>.fromOpaque(client!).takeUnretainedValue()
        capture.properties.append(id)
        if id == kAudioFileStreamProperty_ReadyToProducePackets {
            capture.formatAtReady = value(stream, kAudioFileStreamProperty_DataFormat, AudioStreamBasicDescription.self).1
        }
    }

    static let packetsProc: AudioFileStream_PacketsProc = { client, byteCount, packetCount, data, descriptions in
        let capture = Unmanaged<StreamCapture>.fromOpaque(client!).takeUnretainedValue()
        capture.callbacks += 1
        let bytes = UnsafeRawBufferPointer(start: data, count: Int(byteCount))
        if let descriptions {
            for i in 0..<Int(packetCount) {
                let d = descriptions[i]
                guard d.mStartOffset >= 0, d.mStartOffset + Int64(d.mDataByteSize) <= Int64(byteCount) else {
                    capture.descriptionsOutside += 1
                    continue
                }
                capture.packets.append(Array(bytes[Int(d.mStartOffset)..<Int(d.mStartOffset) + Int(d.mDataByteSize)]))
                capture.descriptions.append(d)
            }
        } else {
            capture.callbacksWithoutDescriptions += 1
            let size = packetCount > 0 ? Int(byteCount / packetCount) : 0
            for i in 0..<Int(packetCount) { capture.packets.append(Array(bytes[(i * size)..<((i + 1) * size)])) }
        }
    }

    /// Opens a stream with the capturing callbacks; the capture must outlive it.
    static func open(_ capture: StreamCapture, hint: AudioFileTypeID = 0) -> AudioFileStreamID? {
        var stream: AudioFileStreamID?
        let status = AudioFileStreamOpen(Unmanaged.passUnretained(capture).toOpaque(), listener, packetsProc, hint, &stream)
        expectStatus(status, noErr, "AudioFileStreamOpen")
        capture.stream = stream
        return stream
    }

    /// Feeds `data` in chunks of `chunk` bytes, `flags` with the first; the first status that is not noErr stops it.
    @discardableResult
    static func feed(_ stream: AudioFileStreamID?, _ data: [UInt8], chunk: Int, flags: AudioFileStreamParseFlags = []) -> OSStatus {
        var offset = 0
        while offset < data.count {
            let n = min(chunk, data.count - offset)
            let status = data[offset..<offset + n].withUnsafeBytes {
                AudioFileStreamParseBytes(stream!, UInt32(n), $0.baseAddress, offset == 0 ? flags : [])
            }
            if status != noErr { return status }
            offset += n
        }
        return noErr
    }

    /// Parses `data` whole in chunks of `chunk` bytes: the capture, the properties at the end, the status.
    static func parse(_ data: [UInt8], chunk: Int, hint: AudioFileTypeID = 0) -> (status: OSStatus, capture: StreamCapture, properties: StreamProperties) {
        let capture = StreamCapture()
        let stream = open(capture, hint: hint)
        defer { if let stream { AudioFileStreamClose(stream) } }
        let status = feed(stream, data, chunk: chunk)
        return (status, capture, properties(stream))
    }

    /// AverageBytesPerPacket once the whole file is parsed.
    static func averageBytesPerPacket(_ file: [UInt8]) -> Double {
        let capture = StreamCapture()
        let stream = open(capture)
        defer { if let stream { AudioFileStreamClose(stream) } }
        feed(stream, file, chunk: 1500)
        return value(stream, kAudioFileStreamProperty_AverageBytesPerPacket, Double.self).1 ?? -1
    }

    static func value<Value>(_ stream: AudioFileStreamID?, _ id: AudioFileStreamPropertyID, _: Value.Type) -> (OSStatus, Value?) {
        guard let stream else { return (kAudio_ParamError, nil) }
        var size = UInt32(MemoryLayout<Value>.size)
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<Value>.size, alignment: 16)
        defer { pointer.deallocate() }
        let status = AudioFileStreamGetProperty(stream, id, &size, pointer)
        return (status, status == noErr && size == UInt32(MemoryLayout<Value>.size) ? pointer.loadUnaligned(as: Value.self) : nil)
    }

    static func bytes(_ stream: AudioFileStreamID?, _ id: AudioFileStreamPropertyID) -> [UInt8]? {
        guard let stream else { return nil }
        var size: UInt32 = 0
        var writable = true
        guard AudioFileStreamGetPropertyInfo(stream, id, &size, &writable) == noErr, !writable else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        guard AudioFileStreamGetProperty(stream, id, &size, &bytes) == noErr else { return nil }
        return Array(bytes.prefix(Int(size)))
    }

    static func properties(_ stream: AudioFileStreamID?) -> StreamProperties {
        let f = value(stream, kAudioFileStreamProperty_DataFormat, AudioStreamBasicDescription.self).1
        let table = value(stream, kAudioFileStreamProperty_PacketTableInfo, AudioFilePacketTableInfo.self).1
        return StreamProperties(
            fileFormat: value(stream, kAudioFileStreamProperty_FileFormat, UInt32.self).1,
            format: f.map { [$0.mSampleRate, Double($0.mFormatID), Double($0.mFormatFlags), Double($0.mBytesPerPacket), Double($0.mFramesPerPacket),
                             Double($0.mBytesPerFrame), Double($0.mChannelsPerFrame), Double($0.mBitsPerChannel)] } ?? [],
            cookie: bytes(stream, kAudioFileStreamProperty_MagicCookieData),
            byteCount: value(stream, kAudioFileStreamProperty_AudioDataByteCount, UInt64.self).1,
            packetCount: value(stream, kAudioFileStreamProperty_AudioDataPacketCount, UInt64.self).1,
            dataOffset: value(stream, kAudioFileStreamProperty_DataOffset, Int64.self).1,
            maximumPacketSize: value(stream, kAudioFileStreamProperty_MaximumPacketSize, UInt32.self).1,
            upperBound: value(stream, kAudioFileStreamProperty_PacketSizeUpperBound, UInt32.self).1,
            packetTable: table.map { [$0.mNumberValidFrames, Int64($0.mPrimingFrames), Int64($0.mRemainderFrames)] },
            bitRate: value(stream, kAudioFileStreamProperty_BitRate, UInt32.self).1,
            layoutTag: bytes(stream, kAudioFileStreamProperty_ChannelLayout).flatMap { $0.count >= 4 ? $0.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) } : nil },
            formatList: bytes(stream, kAudioFileStreamProperty_FormatList).map { $0.count / MemoryLayout<AudioFormatListItem>.size })
    }

    /// ffprobe's packets: file offset and size of each.
    static func probePositions(_ path: String) throws -> [(pos: Int, size: Int)] {
        let result = try runReferee(try #require(tool("ffprobe")),
                                    ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pos,size", "-of", "csv=p=0", path])
        #expect(result.status == 0, "ffprobe \(path): \(result.stderr)")
        return String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let size = Int(fields[0]), let pos = Int(fields[1]) else { return nil }
            return (pos, size)
        }
    }

    /// Signal-to-noise ratio in dB of `ours` against `reference`, at the lag in `lags` that fits best.
    static func snr(_ ours: [Float], _ reference: [Float], channels: Int, lags: [Int]) -> (snr: Double, lag: Int) {
        var best = (snr: -Double.infinity, lag: 0)
        for lag in lags {
            let n = min(ours.count - lag * channels, reference.count)
            guard n > 0 else { continue }
            var signal = 0.0, noise = 0.0
            for i in 0..<n {
                let r = Double(reference[i]), d = Double(ours[i + lag * channels]) - r
                signal += r * r
                noise += d * d
            }
            let value = noise == 0 ? Double.infinity : 10 * log10(signal / noise)
            if value > best.snr { best = (value, lag) }
        }
        return best
    }
}
