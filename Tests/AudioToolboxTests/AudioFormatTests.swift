import Foundation
import Testing
import AudioToolbox

/// Audio Format Services (AudioFormatGetPropertyInfo / AudioFormatGetProperty): each property's
/// values, checked against what jaq's converters really do, and Apple's result codes.
@Suite struct AudioFormatTests {
    static func asbd(_ id: AudioFormatID, rate: Double = 44100, channels: UInt32 = 2, flags: AudioFormatFlags = 0,
                     bits: UInt32 = 0) -> AudioStreamBasicDescription {
        AudioStreamBasicDescription(mSampleRate: rate, mFormatID: id, mFormatFlags: flags, mBytesPerPacket: 0, mFramesPerPacket: 0,
                                    mBytesPerFrame: 0, mChannelsPerFrame: channels, mBitsPerChannel: bits, mReserved: 0)
    }

    /// FormatInfo for `format` with `cookie` as the specifier.
    static func formatInfo(_ format: AudioStreamBasicDescription, cookie: [UInt8] = []) -> (OSStatus, AudioStreamBasicDescription) {
        var value = format
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        let status = cookie.withUnsafeBytes {
            AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, UInt32(cookie.count), cookie.isEmpty ? nil : $0.baseAddress, &size, &value)
        }
        return (status, value)
    }

    /// A property whose specifier is one value of `T`, read as an array of `Item`.
    static func array<T, Item>(_ id: AudioFormatPropertyID, specifier: T?, of: Item.Type) -> (OSStatus, [Item]) {
        var size: UInt32 = 0
        func call<R>(_ body: (UInt32, UnsafeRawPointer?) -> R) -> R {
            guard var value = specifier else { return body(0, nil) }
            return withUnsafeBytes(of: &value) { body(UInt32($0.count), $0.baseAddress) }
        }
        let info = call { AudioFormatGetPropertyInfo(id, $0, $1, &size) }
        guard info == noErr else { return (info, []) }
        let stride = MemoryLayout<Item>.stride
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(Int(size), 1), alignment: 16)
        defer { buffer.deallocate() }
        let status = call { AudioFormatGetProperty(id, $0, $1, &size, buffer) }
        let items = (0..<Int(size) / stride).map { buffer.load(fromByteOffset: $0 * stride, as: Item.self) }
        return (status, items)
    }

    /// A CFString property's text.
    static func string<T>(_ id: AudioFormatPropertyID, _ specifier: T) -> (OSStatus, String?) {
        var value = specifier
        var name: Unmanaged<CFString>?
        var size = UInt32(MemoryLayout<UnsafeRawPointer>.size)
        let status = withUnsafeBytes(of: &value) { AudioFormatGetProperty(id, UInt32($0.count), $0.baseAddress, &size, &name) }
        return (status, name.map { String($0.takeRetainedValue()) })
    }

    // MARK: FormatInfo

    @Test func formatInfoCompletesCompressedFormatsFromTheirID() {
        let expected: [(AudioFormatID, UInt32, UInt32)] = [
            (kAudioFormatMPEG4AAC, 1024, 0), (kAudioFormatMPEG4AAC_HE, 2048, 0), (kAudioFormatAppleLossless, 4096, 0),
            (kAudioFormatMPEGLayer3, 1152, 0), (kAudioFormatAppleIMA4, 64, 68), (kAudioFormatFLAC, 4096, 0),
        ]
        for (id, frames, bytes) in expected {
            let (status, format) = Self.formatInfo(Self.asbd(id))
            expectStatus(status, noErr, fourCharacterCode(OSStatus(bitPattern: id)))
            #expect(format.mFramesPerPacket == frames && format.mBytesPerPacket == bytes && format.mBytesPerFrame == 0,
                    "\(fourCharacterCode(OSStatus(bitPattern: id))): \(format)")
            #expect(format.mSampleRate == 44100 && format.mChannelsPerFrame == 2 && format.mFormatID == id)
        }
    }

    @Test func formatInfoComputesLinearPCMSizes() {
        let signed = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked
        var (status, format) = Self.formatInfo(Self.asbd(kAudioFormatLinearPCM, rate: 48000, flags: signed, bits: 24))
        expectStatus(status, noErr, "24-bit stereo")
        #expect(format.mBytesPerFrame == 6 && format.mBytesPerPacket == 6 && format.mFramesPerPacket == 1)
        (status, format) = Self.formatInfo(Self.asbd(kAudioFormatLinearPCM, channels: 6,
                                                     flags: kAudioFormatFlagsNativeFloatPacked | kAudioFormatFlagIsNonInterleaved, bits: 32))
        expectStatus(status, noErr, "non-interleaved float")
        #expect(format.mBytesPerFrame == 4 && format.mBytesPerPacket == 4, "one channel a buffer: \(format)")
        // What FormatInfo computes is what FillOutASBDForLPCM gives.
        var filled = AudioStreamBasicDescription()
        FillOutASBDForLPCM(&filled, 48000, 2, 24, 24, false, false, false)
        #expect(Self.formatInfo(filled).1.mBytesPerFrame == filled.mBytesPerFrame)
        expectStatus(Self.formatInfo(Self.asbd(kAudioFormatLinearPCM)).0, kAudioFormatUnsupportedDataFormatError, "no bits")
        expectStatus(Self.formatInfo(Self.asbd(kAudioFormatLinearPCM, flags: kAudioFormatFlagIsFloat, bits: 24)).0,
                     kAudioFormatUnsupportedDataFormatError, "24-bit float")
        expectStatus(Self.formatInfo(Self.asbd(0x7A7A_7A7A)).0, kAudioFormatUnsupportedDataFormatError, "'zzzz'")
    }

    @Test func formatInfoReadsTheEncodersCookies() throws {
        // The cookies jaq's encoders hand out describe their streams.
        let cases: [(AudioFormatID, Double, UInt32, UInt32, AudioFormatFlags)] = [
            (kAudioFormatMPEG4AAC, 48000, 1, 1024, 0), (kAudioFormatMPEG4AAC, 22050, 2, 1024, 0),
            (kAudioFormatAppleLossless, 44100, 2, 4096, 1), (kAudioFormatFLAC, 96000, 1, 0, 3),
        ]
        for (id, rate, channels, frames, flags) in cases {
            let bits: UInt32 = flags == 3 ? 24 : 16
            var source = AudioStreamBasicDescription()
            FillOutASBDForLPCM(&source, rate, channels, bits, bits, false, false, false)
            var destination = Self.asbd(id, rate: rate, channels: channels, flags: flags)
            var converter: AudioConverterRef?
            expectStatus(AudioConverterNew(&source, &destination, &converter), noErr, "converter to \(fourCharacterCode(OSStatus(bitPattern: id)))")
            let c = try #require(converter)
            defer { AudioConverterDispose(c) }
            var size: UInt32 = 0
            var writable: DarwinBoolean = false
            expectStatus(AudioConverterGetPropertyInfo(c, kAudioConverterCompressionMagicCookie, &size, &writable))
            var cookie = [UInt8](repeating: 0, count: Int(size))
            expectStatus(AudioConverterGetProperty(c, kAudioConverterCompressionMagicCookie, &size, &cookie))
            // The encoder's own frames per packet (FLAC's depend on the rate).
            var output = AudioStreamBasicDescription()
            size = 40
            expectStatus(AudioConverterGetProperty(c, kAudioConverterCurrentOutputStreamDescription, &size, &output))
            #expect(frames == 0 || output.mFramesPerPacket == frames)
            let (status, format) = Self.formatInfo(Self.asbd(id, rate: 0, channels: 0), cookie: cookie)
            expectStatus(status, noErr, "FormatInfo from \(fourCharacterCode(OSStatus(bitPattern: id)))'s cookie")
            #expect(format.mSampleRate == rate && format.mChannelsPerFrame == channels && format.mFramesPerPacket == output.mFramesPerPacket
                    && format.mFormatFlags == flags, "\(format)")
        }
        // A bare AudioSpecificConfig: AAC-LC, 44.1 kHz, stereo; explicit HE-AAC gives its AAC-LC core.
        var (status, format) = Self.formatInfo(Self.asbd(kAudioFormatMPEG4AAC, rate: 0, channels: 0), cookie: [0x12, 0x10])
        #expect(status == noErr && format.mSampleRate == 44100 && format.mChannelsPerFrame == 2 && format.mFramesPerPacket == 1024)
        // Object type 5 (SBR), core at 22050 Hz mono, extension at 44100, then AAC-LC.
        (status, format) = Self.formatInfo(Self.asbd(kAudioFormatMPEG4AAC_HE, rate: 0, channels: 0), cookie: [0x2B, 0x8A, 0x08, 0x00])
        #expect(status == noErr && format.mFormatID == kAudioFormatMPEG4AAC && format.mSampleRate == 22050
                && format.mChannelsPerFrame == 1 && format.mFramesPerPacket == 1024, "\(format)")
        expectStatus(Self.formatInfo(Self.asbd(kAudioFormatMPEG4AAC), cookie: [0xFF]).0, kAudioFormatUnsupportedDataFormatError, "a 1-byte cookie")
        expectStatus(Self.formatInfo(Self.asbd(kAudioFormatAppleLossless), cookie: Array(repeating: 7, count: 10)).0,
                     kAudioFormatUnsupportedDataFormatError, "no ALACSpecificConfig")
    }

    // MARK: Names, VBR, lists

    @Test func formatNamesAndPacketSizes() {
        #expect(Self.string(kAudioFormatProperty_FormatName, Self.asbd(kAudioFormatMPEG4AAC)) == (noErr, "MPEG-4 AAC"))
        #expect(Self.string(kAudioFormatProperty_FormatName, Self.asbd(kAudioFormatAppleLossless)) == (noErr, "Apple Lossless"))
        let pcm = Self.asbd(kAudioFormatLinearPCM, flags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked, bits: 16)
        #expect(Self.string(kAudioFormatProperty_FormatName, pcm) == (noErr, "Linear PCM, 16 bit little-endian signed integer, 2 channels, 44100 Hz"))
        #expect(Self.string(kAudioFormatProperty_FormatName, Self.asbd(0x7A7A_7A7A)).0 == kAudioFormatUnsupportedDataFormatError)
        var size: UInt32 = 0
        var format = pcm
        expectStatus(AudioFormatGetPropertyInfo(kAudioFormatProperty_FormatName, 40, &format, &size))
        #expect(size == 8, "a CFStringRef")

        for (id, vbr) in [(kAudioFormatMPEG4AAC, 1), (kAudioFormatMPEGLayer3, 1), (kAudioFormatAppleLossless, 1),
                          (kAudioFormatLinearPCM, 0), (kAudioFormatAppleIMA4, 0), (kAudioFormatULaw, 0)] as [(AudioFormatID, UInt32)] {
            for property in [kAudioFormatProperty_FormatIsVBR, kAudioFormatProperty_FormatIsExternallyFramed] {
                var answer: UInt32 = 9
                size = 4
                format = Self.asbd(id)
                expectStatus(AudioFormatGetProperty(property, 40, &format, &size, &answer))
                #expect(answer == vbr, "\(fourCharacterCode(OSStatus(bitPattern: property))) of \(fourCharacterCode(OSStatus(bitPattern: id)))")
            }
        }
        var answer: UInt32 = 0
        size = 4
        expectStatus(AudioFormatGetProperty(kAudioFormatProperty_FormatIsVBR, 36, &format, &size, &answer),
                     kAudioFormatBadSpecifierSizeError, "a 36-byte ASBD")
    }

    @Test func encodeAndDecodeListsAreWhatConvertersAccept() throws {
        let (encodeStatus, encoders) = Self.array(kAudioFormatProperty_EncodeFormatIDs, specifier: UInt32?.none, of: AudioFormatID.self)
        let (decodeStatus, decoders) = Self.array(kAudioFormatProperty_DecodeFormatIDs, specifier: UInt32?.none, of: AudioFormatID.self)
        expectStatus(encodeStatus)
        expectStatus(decodeStatus)
        #expect(Set([kAudioFormatLinearPCM, kAudioFormatMPEG4AAC, kAudioFormatAppleLossless, kAudioFormatFLAC]).isSubset(of: encoders), "\(encoders)")
        #expect(!encoders.contains(kAudioFormatMPEGLayer3), "jaq decodes MP3 but does not encode it")
        #expect(Set(encoders.filter { $0 != kAudioFormatMPEG4AAC_HE }).isSubset(of: decoders) && decoders.contains(kAudioFormatMPEGLayer3), "\(decoders)")
        var pcm = AudioStreamBasicDescription()
        FillOutASBDForLPCM(&pcm, 48000, 2, 16, 16, false, false, false)
        for id in encoders where id != kAudioFormatLinearPCM {
            var destination = Self.formatInfo(Self.asbd(id, rate: 48000)).1
            var converter: AudioConverterRef?
            expectStatus(AudioConverterNew(&pcm, &destination, &converter), noErr, "encode to \(fourCharacterCode(OSStatus(bitPattern: id)))")
            converter.map { _ = AudioConverterDispose($0) }
        }
        for id in decoders where id != kAudioFormatLinearPCM {
            var source = Self.formatInfo(Self.asbd(id, rate: 48000)).1
            var converter: AudioConverterRef?
            expectStatus(AudioConverterNew(&source, &pcm, &converter), noErr, "decode \(fourCharacterCode(OSStatus(bitPattern: id)))")
            converter.map { _ = AudioConverterDispose($0) }
        }
        // A buffer for two IDs gets two.
        var two = [AudioFormatID](repeating: 0, count: 2)
        var size: UInt32 = 8
        expectStatus(AudioFormatGetProperty(kAudioFormatProperty_EncodeFormatIDs, 0, nil, &size, &two))
        #expect(size == 8 && two == Array(encoders.prefix(2)))
        var specifier: UInt32 = 0
        expectStatus(AudioFormatGetPropertyInfo(kAudioFormatProperty_EncodeFormatIDs, 4, &specifier, &size), kAudioFormatBadSpecifierSizeError)
    }

    @Test func availableEncodeSampleRatesOpenTheEncoder() throws {
        let (status, ranges) = Self.array(kAudioFormatProperty_AvailableEncodeSampleRates, specifier: kAudioFormatMPEG4AAC, of: AudioValueRange.self)
        expectStatus(status)
        let rates = ranges.map(\.mMinimum)
        #expect(rates.contains(44100) && rates.contains(48000) && ranges.allSatisfy { $0.mMinimum == $0.mMaximum }, "\(ranges)")
        for rate in rates + [44000] {
            var pcm = AudioStreamBasicDescription()
            FillOutASBDForLPCM(&pcm, rate, 2, 16, 16, false, false, false)
            var aac = Self.asbd(kAudioFormatMPEG4AAC, rate: rate)
            var converter: AudioConverterRef?
            let created = AudioConverterNew(&pcm, &aac, &converter)
            #expect((created == noErr) == rates.contains(rate), "AAC at \(rate) Hz: \(fourCharacterCode(created))")
            converter.map { _ = AudioConverterDispose($0) }
        }
        let opus = Self.array(kAudioFormatProperty_AvailableEncodeSampleRates, specifier: kAudioFormatOpus, of: AudioValueRange.self)
        #expect(opus.0 != noErr || opus.1.map(\.mMinimum) == [8000, 12000, 16000, 24000, 48000])
        let bitRates = Self.array(kAudioFormatProperty_AvailableEncodeBitRates, specifier: kAudioFormatMPEG4AAC, of: AudioValueRange.self)
        #expect(bitRates.0 == noErr && bitRates.1.count == 1 && bitRates.1[0].mMinimum == 8000 && bitRates.1[0].mMaximum == 320_000)
        let lossless = Self.array(kAudioFormatProperty_AvailableEncodeBitRates, specifier: kAudioFormatAppleLossless, of: AudioValueRange.self)
        #expect(lossless.0 == noErr && lossless.1.isEmpty, "ALAC has no bit rate")
        #expect(Self.array(kAudioFormatProperty_AvailableEncodeSampleRates, specifier: kAudioFormatMPEGLayer3, of: AudioValueRange.self).0
                == kAudioFormatUnsupportedDataFormatError, "no MP3 encoder")
        #expect(Self.array(kAudioFormatProperty_AvailableEncodeSampleRates, specifier: UInt64(kAudioFormatMPEG4AAC), of: AudioValueRange.self).0
                == kAudioFormatBadSpecifierSizeError)
    }

    // MARK: Channel layouts

    /// The labels of an AudioChannelLayout's descriptions.
    static func labels(_ bytes: [UInt8]) -> (tag: UInt32, labels: [UInt32]) {
        bytes.withUnsafeBytes { raw in
            let count = Int(raw.load(fromByteOffset: 8, as: UInt32.self))
            return (raw.load(as: UInt32.self), (0..<count).map { raw.load(fromByteOffset: 12 + 20 * $0, as: UInt32.self) })
        }
    }

    @Test func channelLayoutsForTagsAndBitmaps() {
        let (status, bytes) = Self.array(kAudioFormatProperty_ChannelLayoutForTag, specifier: kAudioChannelLayoutTag_MPEG_5_1_A, of: UInt8.self)
        expectStatus(status)
        #expect(bytes.count == 12 + 6 * 20)
        let (l, r, c, lfe, ls, rs) = (kAudioChannelLabel_Left, kAudioChannelLabel_Right, kAudioChannelLabel_Center,
                                      kAudioChannelLabel_LFEScreen, kAudioChannelLabel_LeftSurround, kAudioChannelLabel_RightSurround)
        #expect(Self.labels(bytes) == (kAudioChannelLayoutTag_UseChannelDescriptions, [l, r, c, lfe, ls, rs]))
        let d = Self.array(kAudioFormatProperty_ChannelLayoutForTag, specifier: kAudioChannelLayoutTag_MPEG_5_1_D, of: UInt8.self)
        #expect(Self.labels(d.1).labels == [c, l, r, ls, rs, lfe])
        let discrete = Self.array(kAudioFormatProperty_ChannelLayoutForTag, specifier: kAudioChannelLayoutTag_DiscreteInOrder | 3, of: UInt8.self)
        #expect(Self.labels(discrete.1).labels == [kAudioChannelLabel_Discrete_0, kAudioChannelLabel_Discrete_1, kAudioChannelLabel_Discrete_2])
        #expect(Self.array(kAudioFormatProperty_ChannelLayoutForTag, specifier: kAudioChannelLayoutTag_UseChannelBitmap, of: UInt8.self).0
                == kAudioFormatUnknownFormatError)
        let bitmap: UInt32 = 0b1011  // kAudioChannelBit_Left | _Right | _LFEScreen
        let fromBitmap = Self.array(kAudioFormatProperty_ChannelLayoutForBitmap, specifier: bitmap, of: UInt8.self)
        #expect(fromBitmap.0 == noErr && Self.labels(fromBitmap.1).labels == [l, r, lfe])
        #expect(Self.array(kAudioFormatProperty_ChannelLayoutForBitmap, specifier: UInt32(1 << 30), of: UInt8.self).0 == kAudioFormatUnknownFormatError)

        // A buffer too small for the layout.
        var small = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 32
        var tag = kAudioChannelLayoutTag_Stereo
        expectStatus(AudioFormatGetProperty(kAudioFormatProperty_ChannelLayoutForTag, 4, &tag, &size, &small), kAudioFormatBadPropertySizeError)
    }

    @Test func numberOfChannelsAndNamesOfLayouts() {
        func layout(tag: UInt32, bitmap: UInt32 = 0, labels: [UInt32] = []) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 12 + 20 * labels.count)
            bytes.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: tag, as: UInt32.self)
                raw.storeBytes(of: bitmap, toByteOffset: 4, as: UInt32.self)
                raw.storeBytes(of: UInt32(labels.count), toByteOffset: 8, as: UInt32.self)
                for (i, label) in labels.enumerated() { raw.storeBytes(of: label, toByteOffset: 12 + 20 * i, as: UInt32.self) }
            }
            return bytes
        }
        func channels(_ bytes: [UInt8]) -> (OSStatus, UInt32) {
            var count: UInt32 = 0
            var size: UInt32 = 4
            let status = AudioFormatGetProperty(kAudioFormatProperty_NumberOfChannelsForLayout, UInt32(bytes.count), bytes, &size, &count)
            return (status, count)
        }
        func name(_ bytes: [UInt8]) -> (OSStatus, String?) {
            var string: Unmanaged<CFString>?
            var size: UInt32 = 8
            let status = AudioFormatGetProperty(kAudioFormatProperty_ChannelLayoutName, UInt32(bytes.count), bytes, &size, &string)
            return (status, string.map { String($0.takeRetainedValue()) })
        }
        #expect(channels(layout(tag: kAudioChannelLayoutTag_MPEG_5_1_A)) == (noErr, 6))
        #expect(channels(layout(tag: kAudioChannelLayoutTag_UseChannelBitmap, bitmap: 0b1011)) == (noErr, 3))
        #expect(channels(layout(tag: kAudioChannelLayoutTag_UseChannelDescriptions, labels: [1, 2, 3])) == (noErr, 3))
        let truncated = Array(layout(tag: kAudioChannelLayoutTag_UseChannelDescriptions, labels: [1, 2, 3]).dropLast(20))
        #expect(channels(truncated).0 == kAudioFormatBadSpecifierSizeError, "descriptions past the specifier")
        #expect(channels([1, 2, 3]).0 == kAudioFormatBadSpecifierSizeError)

        #expect(name(layout(tag: kAudioChannelLayoutTag_Stereo)) == (noErr, "Stereo (L R)"))
        #expect(name(layout(tag: kAudioChannelLayoutTag_MPEG_5_1_A)) == (noErr, "5.1 (L R C LFE Ls Rs)"))
        #expect(name(layout(tag: kAudioChannelLayoutTag_UseChannelDescriptions, labels: [3, 1])) == (noErr, "Channels (C L)"))
        #expect(name(layout(tag: 0x7A7A_0002)).0 == kAudioFormatUnknownFormatError)
    }

    // MARK: Result codes, helpers of the headers

    @Test func unsupportedPropertiesSizesAndNullPointers() {
        var size: UInt32 = 0
        expectStatus(AudioFormatGetPropertyInfo(0x7A7A_7A7A, 0, nil, &size), kAudioFormatUnsupportedPropertyError, "'zzzz'")
        expectStatus(AudioFormatGetPropertyInfo(kAudioFormatProperty_FormatList, 0, nil, &size), kAudioFormatUnsupportedPropertyError, "FormatList")
        var format = Self.asbd(kAudioFormatMPEG4AAC)
        size = 20
        expectStatus(AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, nil, &size, &format), kAudioFormatBadPropertySizeError, "20 bytes")
        expectStatus(AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, nil, nil, &format), kAudio_ParamError, "NULL size")
        size = 0
        expectStatus(AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, nil, &size, nil), noErr, "size only")
        #expect(size == 40)
        var answer: UInt32 = 0
        size = 2
        expectStatus(AudioFormatGetProperty(kAudioFormatProperty_FormatIsVBR, 40, &format, &size, &answer), kAudioFormatBadPropertySizeError)
        #expect(kAudioFormatUnsupportedPropertyError == 0x7072_6F70 && kAudioFormatBadPropertySizeError == 0x2173_697A
                && kAudioFormatBadSpecifierSizeError == 0x2173_7063 && kAudioFormatUnknownFormatError == 0x2166_6D74)
    }

    /// Hostile descriptions, cookies and layouts get result codes, never a trap.
    @Test func hostileSpecifiersGetResultCodes() {
        var generator = SystemRandomNumberGenerator()
        let ids: [AudioFormatID] = [kAudioFormatLinearPCM, kAudioFormatMPEG4AAC, kAudioFormatMPEG4AAC_HE, kAudioFormatAppleLossless,
                                    kAudioFormatFLAC, kAudioFormatOpus, kAudioFormatAppleIMA4, kAudioFormatMPEGLayer3, kAudioFormatULaw]
        let properties = [kAudioFormatProperty_FormatName, kAudioFormatProperty_FormatIsVBR, kAudioFormatProperty_NumberOfChannelsForLayout,
                          kAudioFormatProperty_ChannelLayoutName, kAudioFormatProperty_ChannelLayoutForTag,
                          kAudioFormatProperty_ChannelLayoutForBitmap, kAudioFormatProperty_AvailableEncodeSampleRates]
        var answered = 0
        for round in 0..<3000 {
            var bytes = (0..<40).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let id = ids[round % ids.count]
            withUnsafeBytes(of: id) { bytes.replaceSubrange(8..<12, with: $0) }
            let cookie = (0..<Int.random(in: 0...80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var format = bytes.withUnsafeBytes { $0.loadUnaligned(as: AudioStreamBasicDescription.self) }
            if round % 3 == 0 { format.mSampleRate = [Double.nan, .infinity, -1, 1e300][round / 3 % 4] }
            let (status, _) = Self.formatInfo(format, cookie: cookie)
            #expect([noErr, kAudioFormatUnsupportedDataFormatError].contains(status), "FormatInfo: \(fourCharacterCode(status))")
            if status == noErr { answered += 1 }
            let specifier = Array(bytes.prefix(Int.random(in: 0...40, using: &generator)))
            for property in properties {
                var value = [UInt8](repeating: 0, count: 256)
                var size = UInt32(value.count)
                let status = AudioFormatGetProperty(property, UInt32(specifier.count), specifier, &size, &value)
                if status == noErr, property == kAudioFormatProperty_FormatName || property == kAudioFormatProperty_ChannelLayoutName {
                    value.withUnsafeBytes { Unmanaged<CFString>.fromOpaque($0.load(as: UnsafeRawPointer.self)).release() }
                }
            }
        }
        #expect(answered > 100, "some random descriptions are formats jaq knows")
    }

    @Test func fillOutASBDForLPCMAndTheAudioCodesAreApples() {
        var format = AudioStreamBasicDescription()
        FillOutASBDForLPCM(&format, 44100, 2, 24, 32, false, true, false)
        #expect(format.mFormatFlags == kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsBigEndian | kAudioFormatFlagIsAlignedHigh)
        #expect(format.mBytesPerFrame == 8 && format.mBytesPerPacket == 8 && format.mFramesPerPacket == 1 && format.mBitsPerChannel == 24)
        FillOutASBDForLPCM(&format, 48000, 6, 32, 32, true, false, true)
        #expect(format.mFormatFlags == kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved)
        #expect(format.mBytesPerFrame == 4 && format.mChannelsPerFrame == 6)
        #expect([kAudio_NoError, kAudio_UnimplementedError, kAudio_FileNotFoundError, kAudio_FilePermissionError,
                 kAudio_TooManyFilesOpenError, kAudio_BadFilePathError, kAudio_ParamError, kAudio_MemFullError]
                == [0, -4, -43, -54, -42, 0x2170_7468, -50, -108])
    }

    /// kAudio_UnimplementedError is declared so that ported code comparing against it compiles;
    /// no jaq function answers with it (every function the headers declare is implemented, and
    /// what one does not support gets that API's own code): outside the header that declares
    /// it, no source names it or returns its value.
    @Test func noFunctionAnswersUnimplemented() throws {
        let sources = CProgram.packageRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var naming: [String] = []
        var scanned = 0
        for case let url as URL in files where ["swift", "c", "h"].contains(url.pathExtension) {
            scanned += 1
            guard url.lastPathComponent != "CoreAudioTypes.h" else { continue }
            let text = try String(contentsOf: url, encoding: .utf8)
            if text.contains("kAudio_UnimplementedError") || text.contains("OSStatus(-4)") { naming.append(url.path) }
        }
        #expect(scanned > 100, "the sources were found under \(sources.path)")
        #expect(naming.isEmpty, "these answer kAudio_UnimplementedError: \(naming)")
    }
}
