//! Exact-match hash table whose lookups split into **hash → prefetch bucket → search**, so
//! that a vector of keys can be looked up with all bucket fetches in flight (the role of
//! VPP's bihash and DPDK's `rte_hash`).
//!
//! # Layout
//!
//! A [`HashTable<K, V, N>`] is one array of 64-byte-aligned buckets; a bucket holds `N`
//! 16-bit tags (signatures), a displaced-key counter, then `N` values and `N` keys, inline.
//! For a MAC address and a `u32` value with `N = 5` ([`MacTable`]) a bucket is exactly one
//! 64-byte cache line, so a lookup normally touches **one line**, hit or miss:
//!
//! ```text
//! | tags u16×5 | displaced u16 | values u32×5 | keys [u8;6]×5 | pad 2 |   = 64 B
//! ```
//!
//! In buckets of several lines (names: 320 bytes) tags and values share the first line,
//! so a miss reads one line and a hit that line and its key's.
//!
//! Each key has two candidate buckets (bucketized cuckoo hashing). Inserts put a key in
//! its *primary* bucket when there is room; only when it is full does the key go to its
//! *secondary* bucket (directly, or after a breadth-first search for a bounded path of
//! displacements), and the primary bucket's *displaced* counter records that some of its
//! keys live elsewhere. A search therefore reads the secondary bucket only when the
//! primary bucket's counter is non-zero: a miss in a bucket whose keys all live at home
//! costs one cache line, and the bulk lookup defers those rare second reads to a third
//! pass, with their own prefetches.
//!
//! The table is sized at creation for `capacity` keys at ≤ 90% of its slots (≤ 85% for
//! `N = 2`, ≤ 45% for `N = 1`); it never grows. Inserting a new key into a table that holds
//! `capacity` keys fails with [`HashError::Full`]; if the displacement search (at most
//! [`MAX_CUCKOO_NODES`] buckets visited) finds no room, the insert fails with
//! [`HashError::NoSlot`] and the table is unchanged. Lookups never allocate.
//!
//! # Sharing between threads
//!
//! A `HashTable` is a plain value (`&self` lookups, `&mut self` changes). For a table
//! that reader threads look up while others change it, see [`shared`]: two copies under
//! left-right publication, readers that never block, batches published at once.
//!
//! # Memory per entry (at full capacity)
//!
//! `64 B / (5 × 0.9) ≈ 14.2 B` for [`MacTable`], `64 / (3 × 0.9) ≈ 23.7 B` for
//! [`FlowTable`], see [`HashTable::bytes_per_entry`]. 64M MAC entries take 0.89 GiB.
//!
//! # Example: the L2 switch pattern
//!
//! ```
//! use pktvec_lookup::hash::{MacTable, HashTable};
//! use pktvec_packet::wire::MacAddr;
//!
//! let mut fib: MacTable = HashTable::new(1024)?;
//! let a = MacAddr::new([2, 0, 0, 0, 0, 1]);
//! let b = MacAddr::new([2, 0, 0, 0, 0, 2]);
//! fib.insert(a, 1)?;
//! fib.insert(b, 2)?;
//!
//! // Step by step: hash, prefetch the bucket, search.
//! let h = fib.hash(&a);
//! fib.prefetch(h);
//! assert_eq!(fib.lookup_hashed(&a, h), Some(1));
//!
//! // A vector at once: hash and prefetch every key, then search.
//! let dmacs = [a, b, MacAddr::BROADCAST];
//! let mut out = [None; 3];
//! assert_eq!(fib.lookup_bulk(&dmacs, &mut out), 2);
//! assert_eq!(out, [Some(1), Some(2), None]);
//! # Ok::<(), pktvec_lookup::hash::HashError>(())
//! ```

use core::mem::size_of;

use pktvec_packet::prefetch::prefetch_read;
use pktvec_packet::wire::MacAddr;

mod keys;
pub mod shared;

pub use keys::{
    hash_bytes, hash_u64, hash_u64x2, HashKey, Ipv4FiveTuple, Ipv6FiveTuple, Name, NameTooLong,
    PrefixHasher,
};

/// Most buckets the displacement (cuckoo) search of one insert visits before it gives up
/// with [`HashError::NoSlot`].
pub const MAX_CUCKOO_NODES: usize = 1024;

/// Largest sub-batch of [`HashTable::lookup_bulk_sub`]; larger values are clamped to it.
pub const MAX_SUB_BATCH: usize = 256;

/// Seed of tables made with [`HashTable::new`].
pub const DEFAULT_SEED: u64 = 0x5eed_0f7a_b1e5;

/// A MAC forwarding table: one 64-byte bucket holds five MAC addresses and `u32` values.
pub type MacTable<V = u32> = HashTable<MacAddr, V, 5>;

/// An IPv4 flow table: one 64-byte bucket holds three 5-tuples and `u32` values.
pub type FlowTable<V = u32> = HashTable<Ipv4FiveTuple, V, 3>;

/// An IPv6 flow table: four 5-tuples and values per 192-byte bucket (tags in the first line).
pub type Flow6Table<V = u32> = HashTable<Ipv6FiveTuple, V, 4>;

/// A name table (NDN): four inline names and values per 320-byte bucket (tags in the first
/// line, so a miss reads one line).
pub type NameTable<V = u32> = HashTable<Name, V, 4>;

/// Errors of [`HashTable`] construction and insertion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    /// The table already holds `capacity` keys; the new key was not inserted.
    #[error("hash table full: it holds its capacity of {capacity} entries")]
    Full {
        /// The table's capacity.
        capacity: usize,
    },
    /// Both of the key's buckets and every bucket reachable by a bounded displacement path
    /// are full; the key was not inserted and the table is unchanged. Only happens near
    /// full capacity or with keys whose hashes collide on purpose.
    #[error("no free slot reachable within {MAX_CUCKOO_NODES} cuckoo displacements")]
    NoSlot,
    /// The requested capacity cannot be represented (its buckets would overflow `usize`).
    #[error("capacity {0} is too large")]
    InvalidCapacity(usize),
    /// The bucket array could not be allocated.
    #[error("cannot allocate {0} bytes for the bucket array")]
    Alloc(usize),
}

/// A key's hash under one table's seed, from [`HashTable::hash`]; pass it to
/// [`HashTable::prefetch`] and [`HashTable::lookup_hashed`] of the same table.
///
/// A token from another table (or made up) gives wrong but memory-safe answers: the lookup
/// searches the wrong buckets and returns `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hashed(pub u64);

impl Hashed {
    /// The 16-bit tag stored in the bucket (never 0: 0 marks an empty slot).
    #[inline(always)]
    pub fn tag(self) -> u16 {
        (self.0 as u16).max(1)
    }
}

/// One bucket: tags first (a miss reads only them), values, keys. The values sit next to
/// the tags so that in a bucket of several lines a hit reads the first line and its key's.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket<K, V, const N: usize> {
    tags: [u16; N],
    /// Keys whose primary bucket this is but which live in their secondary bucket
    /// (saturating: once at `u16::MAX` it stays there).
    displaced: u16,
    vals: [V; N],
    keys: [K; N],
}

impl<K: HashKey, V: Copy + Default, const N: usize> Bucket<K, V, N> {
    fn empty() -> Self {
        Bucket {
            tags: [0; N],
            displaced: 0,
            vals: [V::default(); N],
            keys: [K::default(); N],
        }
    }

    /// Bit `i` set when slot `i` holds `tag` (branch-free: the slot of a hit is random,
    /// so a search loop that exits early would mispredict once per lookup).
    #[inline(always)]
    fn tag_mask(&self, tag: u16) -> u32 {
        #[cfg(target_arch = "x86_64")]
        if N <= 8 {
            return simd::tag_mask8(&self.tags, tag);
        }
        tag_mask_portable(&self.tags, tag)
    }

    #[inline(always)]
    fn position(&self, tag: u16, key: &K) -> Option<usize> {
        self.position_by(tag, |k| k == key)
    }

    /// The first slot holding `tag` and a key that `eq` accepts (keys of other slots are
    /// not read).
    #[inline(always)]
    fn position_by(&self, tag: u16, eq: impl Fn(&K) -> bool) -> Option<usize> {
        let mut m = self.tag_mask(tag);
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            if eq(&self.keys[i]) {
                return Some(i);
            }
            m &= m - 1;
        }
        None
    }

    #[inline(always)]
    fn find(&self, tag: u16, key: &K) -> Option<V> {
        self.position(tag, key).map(|i| self.vals[i])
    }

    #[inline(always)]
    fn find_by(&self, tag: u16, eq: impl Fn(&K) -> bool) -> Option<V> {
        self.position_by(tag, eq).map(|i| self.vals[i])
    }

    #[inline]
    fn free_slot(&self) -> Option<usize> {
        self.tags.iter().position(|&t| t == 0)
    }

    #[inline]
    fn clear_slot(&mut self, i: usize) {
        self.tags[i] = 0;
        self.keys[i] = K::default();
        self.vals[i] = V::default();
    }
}

/// Bit `i` set when `tags[i] == tag`, one compare per slot (the form for any `N`).
#[inline(always)]
fn tag_mask_portable(tags: &[u16], tag: u16) -> u32 {
    let mut m = 0u32;
    for (i, &t) in tags.iter().enumerate() {
        m |= u32::from(t == tag) << i;
    }
    m
}

/// The tag compare of buckets of up to eight slots with SSE2 (part of every x86_64 CPU):
/// the tags in one 128-bit register, one 16-bit compare against the broadcast tag, one
/// byte mask, instead of a compare, set and shift per slot.
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// [`super::tag_mask_portable`] for `tags.len() <= 8`. Lanes past the slots hold 0,
    /// which no tag equals (tags are never 0).
    #[inline(always)]
    pub(super) fn tag_mask8(tags: &[u16], tag: u16) -> u32 {
        let t = |i: usize| tags.get(i).copied().unwrap_or(0);
        // Lanes 0..4 as one word (one load), the others inserted one by one.
        let lo =
            u64::from(t(0)) | u64::from(t(1)) << 16 | u64::from(t(2)) << 32 | u64::from(t(3)) << 48;
        // SAFETY: these intrinsics only compute on values (no memory access) and need
        // SSE2 alone, which every x86_64 CPU has (it is in the target's baseline).
        unsafe {
            let mut v = _mm_cvtsi64_si128(lo as i64);
            if tags.len() > 4 {
                v = _mm_insert_epi16::<4>(v, i32::from(t(4)));
            }
            if tags.len() > 5 {
                v = _mm_insert_epi16::<5>(v, i32::from(t(5)));
            }
            if tags.len() > 6 {
                v = _mm_insert_epi16::<6>(v, i32::from(t(6)));
            }
            if tags.len() > 7 {
                v = _mm_insert_epi16::<7>(v, i32::from(t(7)));
            }
            let eq = _mm_cmpeq_epi16(v, _mm_set1_epi16(tag as i16));
            // Words to bytes (0xffff → 0xff, 0 → 0), then one bit per slot.
            _mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())) as u32
        }
    }
}

/// Counters from [`HashTable::stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HashStats {
    /// Keys stored.
    pub len: usize,
    /// Most keys the table accepts.
    pub capacity: usize,
    /// Buckets.
    pub buckets: usize,
    /// Slots per bucket (`N`).
    pub slots_per_bucket: usize,
    /// Bytes per bucket.
    pub bucket_bytes: usize,
    /// Bytes of the bucket array.
    pub memory_bytes: usize,
    /// Keys living in their secondary bucket (their lookups read two buckets).
    pub in_secondary: usize,
    /// Largest displaced-key counter of any bucket.
    pub max_displaced: u16,
}

/// Fixed-capacity exact-match table with prefetchable lookups; see the [module
/// docs](self) for the layout and an example.
///
/// `K` is the key ([`HashKey`]: MAC, 5-tuples, names, integers or your own), `V` a small
/// `Copy` value (a port or next-hop id), `N` the slots per bucket (1 ≤ N ≤ 16); choose `N`
/// so that a bucket fills whole cache lines (the aliases [`MacTable`], [`FlowTable`],
/// [`Flow6Table`], [`NameTable`] do).
#[derive(Clone)]
pub struct HashTable<K, V, const N: usize = 4> {
    buckets: Vec<Bucket<K, V, N>>,
    len: usize,
    capacity: usize,
    seed: u64,
}

impl<K: HashKey + core::fmt::Debug, V: Copy + Default + core::fmt::Debug, const N: usize>
    core::fmt::Debug for HashTable<K, V, N>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HashTable")
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("buckets", &self.buckets.len())
            .field("slots_per_bucket", &N)
            .finish()
    }
}

/// `h` scaled to `0..n` by the high half of `h × n` (no division, no power-of-two size).
#[inline(always)]
fn reduce(h: u64, n: usize) -> usize {
    ((h as u128 * n as u128) >> 64) as usize
}

impl<K: HashKey, V: Copy + Default, const N: usize> HashTable<K, V, N> {
    /// An empty table for at most `capacity` keys, with the [`DEFAULT_SEED`].
    ///
    /// ```
    /// use pktvec_lookup::hash::{HashTable, MacTable};
    /// let t: MacTable = HashTable::new(1 << 20)?;
    /// assert_eq!(t.capacity(), 1 << 20);
    /// assert!(t.bytes_per_entry() < 15.0);
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn new(capacity: usize) -> Result<Self, HashError> {
        Self::with_seed(capacity, DEFAULT_SEED)
    }

    /// An empty table for at most `capacity` keys whose hash is keyed with `seed` (use a
    /// random seed where keys may be chosen by an attacker).
    pub fn with_seed(capacity: usize, seed: u64) -> Result<Self, HashError> {
        const { assert!(N >= 1 && N <= 16, "slots per bucket must be in 1..=16") };
        // Slots needed for `capacity` keys at the target load (percent).
        let load: u128 = match N {
            1 => 45,
            2 => 85,
            _ => 90,
        };
        let nb = (capacity as u128 * 100).div_ceil(N as u128 * load).max(2);
        let bytes = nb.saturating_mul(size_of::<Bucket<K, V, N>>() as u128);
        if bytes > isize::MAX as u128 {
            return Err(HashError::InvalidCapacity(capacity));
        }
        let (nb, bytes) = (nb as usize, bytes as usize);
        let mut buckets = Vec::new();
        buckets
            .try_reserve_exact(nb)
            .map_err(|_| HashError::Alloc(bytes))?;
        buckets.resize(nb, Bucket::empty());
        Ok(HashTable {
            buckets,
            len: 0,
            capacity,
            seed,
        })
    }

    /// Keys stored.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no key is stored.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most keys the table accepts (fixed at creation).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of buckets.
    #[inline]
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Bytes of one bucket (a multiple of 64).
    pub const fn bucket_bytes() -> usize {
        size_of::<Bucket<K, V, N>>()
    }

    /// Bytes of the bucket array (all of the table's heap memory).
    pub fn memory_bytes(&self) -> usize {
        self.buckets.len() * Self::bucket_bytes()
    }

    /// [`memory_bytes`](Self::memory_bytes) divided by the capacity: memory per entry of
    /// a full table.
    pub fn bytes_per_entry(&self) -> f64 {
        self.memory_bytes() as f64 / self.capacity.max(1) as f64
    }

    /// The table's hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Step 1 of a lookup: the key's hash under this table's seed.
    #[inline(always)]
    pub fn hash(&self, key: &K) -> Hashed {
        Hashed(key.hash_with(self.seed))
    }

    #[inline(always)]
    fn primary(&self, h: Hashed) -> usize {
        reduce(h.0, self.buckets.len())
    }

    #[inline(always)]
    fn secondary(&self, h: Hashed, primary: usize) -> usize {
        let n = self.buckets.len();
        let x = (h.0 ^ (h.0 >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let s = reduce(x, n);
        if s != primary {
            s
        } else if primary + 1 == n {
            0
        } else {
            primary + 1
        }
    }

    /// The bucket other than `cur` among the two of the key hashing to `h`.
    #[inline]
    fn other_bucket(&self, h: Hashed, cur: usize) -> usize {
        let p = self.primary(h);
        if cur == p {
            self.secondary(h, p)
        } else {
            p
        }
    }

    #[inline(always)]
    fn prefetch_bucket(&self, i: usize) {
        if let Some(b) = self.buckets.get(i) {
            Self::prefetch_ref(b);
        }
    }

    /// The first line of bucket `b`; both lines of a two-line bucket.
    #[inline(always)]
    fn prefetch_ref(b: &Bucket<K, V, N>) {
        prefetch_read(&b.tags);
        if size_of::<Bucket<K, V, N>>() > 64 && size_of::<Bucket<K, V, N>>() <= 128 {
            prefetch_read(&b.keys[N - 1]);
        }
    }

    /// Step 2 of a lookup: prefetch the key's primary bucket (its first line holding the
    /// tags; both lines of a two-line bucket). A hint only: it never changes a result.
    #[inline(always)]
    pub fn prefetch(&self, h: Hashed) {
        self.prefetch_bucket(self.primary(h));
    }

    /// Step 3 of a lookup: search for `key` whose hash is `h` (from [`hash`](Self::hash)).
    ///
    /// ```
    /// use pktvec_lookup::hash::{HashTable, Ipv4FiveTuple, FlowTable};
    /// let mut flows: FlowTable = HashTable::new(1000)?;
    /// let f = Ipv4FiveTuple::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1234, 80, 6);
    /// flows.insert(f, 42)?;
    /// let h = flows.hash(&f);
    /// flows.prefetch(h);
    /// assert_eq!(flows.lookup_hashed(&f, h), Some(42));
    /// assert_eq!(flows.lookup_hashed(&f.reversed(), flows.hash(&f.reversed())), None);
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    #[inline(always)]
    pub fn lookup_hashed(&self, key: &K, h: Hashed) -> Option<V> {
        let tag = h.tag();
        let p = self.primary(h);
        let b = &self.buckets[p];
        if let Some(v) = b.find(tag, key) {
            return Some(v);
        }
        if b.displaced == 0 {
            return None;
        }
        self.buckets[self.secondary(h, p)].find(tag, key)
    }

    /// Step 3 of a lookup by a borrowed form of the key: the value of the key hashing to
    /// `h` that `eq` accepts. `eq` is asked only about keys whose tag matches `h`'s (a
    /// 16-bit fingerprint of the hash, so other slots' keys are not even read), and must
    /// accept exactly the one key whose [`hash`](Self::hash) is `h`, or none; then the
    /// answer is that of [`lookup_hashed`](Self::lookup_hashed). This is how a key is
    /// looked up without building it, e.g. a name by the packet bytes that hold it (see
    /// [`lookup_bytes_hashed`](Self::lookup_bytes_hashed)).
    ///
    /// ```
    /// use pktvec_lookup::hash::{HashTable, MacTable};
    /// use pktvec_packet::wire::MacAddr;
    /// let mut t: MacTable = HashTable::new(8)?;
    /// let m = MacAddr::new([2, 0, 0, 0, 0, 9]);
    /// t.insert(m, 7)?;
    /// let h = t.hash(&m);
    /// assert_eq!(t.lookup_hashed_by(h, |k| k.0 == [2, 0, 0, 0, 0, 9]), Some(7));
    /// assert_eq!(t.lookup_hashed_by(h, |_| false), None);
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    #[inline(always)]
    pub fn lookup_hashed_by(&self, h: Hashed, eq: impl Fn(&K) -> bool) -> Option<V> {
        let tag = h.tag();
        let p = self.primary(h);
        let b = &self.buckets[p];
        if let Some(v) = b.find_by(tag, &eq) {
            return Some(v);
        }
        if b.displaced == 0 {
            return None;
        }
        self.buckets[self.secondary(h, p)].find_by(tag, eq)
    }

    /// Like [`prefetch`](Self::prefetch), but every cache line of the primary bucket in
    /// which a key or a value starts, not only the first: for buckets of several lines
    /// (names, IPv6 flows) where a hit is expected, so that tags, key and value are all in
    /// flight before the search. A hint only: it never changes a result.
    #[inline(always)]
    pub fn prefetch_bucket_lines(&self, h: Hashed) {
        let Some(b) = self.buckets.get(self.primary(h)) else {
            return;
        };
        prefetch_read(&b.tags);
        if size_of::<Bucket<K, V, N>>() <= 64 {
            return;
        }
        // Offsets within the bucket are constants: the loops fold to the prefetches.
        let base = b as *const Bucket<K, V, N> as usize;
        let mut next_line = 64;
        for v in &b.vals {
            let off = v as *const V as usize - base;
            if off >= next_line {
                prefetch_read(v);
                next_line = (off / 64 + 1) * 64;
            }
        }
        for k in &b.keys {
            let off = k as *const K as usize - base;
            if off >= next_line {
                prefetch_read(k);
                next_line = (off / 64 + 1) * 64;
            }
        }
    }

    /// Prefetch the key's secondary bucket (its first line), where the key lives if its
    /// primary bucket was full when it was inserted: about a fifth of the keys of a table
    /// at 90% load. For lookups that expect a hit, next to [`prefetch`](Self::prefetch) or
    /// [`prefetch_bucket_lines`](Self::prefetch_bucket_lines); a miss reads the secondary
    /// bucket only when the primary's displaced counter is non-zero. A hint only.
    #[inline(always)]
    pub fn prefetch_secondary(&self, h: Hashed) {
        let p = self.primary(h);
        self.prefetch_bucket(self.secondary(h, p));
    }

    /// The value of `key`, if present (hash and search, no prefetch).
    #[inline]
    pub fn lookup(&self, key: &K) -> Option<V> {
        self.lookup_hashed(key, self.hash(key))
    }

    /// Whether `key` is present.
    #[inline]
    pub fn contains_key(&self, key: &K) -> bool {
        self.lookup(key).is_some()
    }

    /// Looks up every key of `keys` into `out` (same length) with all bucket fetches in
    /// flight: hashes and prefetches the primary buckets of up to [`MAX_SUB_BATCH`] keys,
    /// then searches them. Returns the number of hits.
    ///
    /// # Panics
    /// If `keys` and `out` differ in length.
    #[inline]
    pub fn lookup_bulk(&self, keys: &[K], out: &mut [Option<V>]) -> usize {
        self.lookup_bulk_sub(keys, out, MAX_SUB_BATCH)
    }

    /// [`lookup_bulk`](Self::lookup_bulk) in sub-batches of `b` keys: for each sub-batch, (1) hash every key and prefetch its primary
    /// bucket, (2) search the primary buckets; keys that may live in their secondary bucket
    /// have it prefetched, (3) search those. `b` is clamped to `1..=MAX_SUB_BATCH`.
    /// Returns the number of hits.
    ///
    /// ```
    /// use pktvec_lookup::hash::{HashTable, MacTable};
    /// use pktvec_packet::wire::MacAddr;
    /// let mut t: MacTable = HashTable::new(100)?;
    /// let keys: Vec<MacAddr> = (0..100u8).map(|i| MacAddr::new([2, 0, 0, 0, 0, i])).collect();
    /// for (i, k) in keys.iter().enumerate() {
    ///     t.insert(*k, i as u32)?;
    /// }
    /// let mut out = vec![None; 100];
    /// assert_eq!(t.lookup_bulk_sub(&keys, &mut out, 16), 100);
    /// assert!(out.iter().enumerate().all(|(i, v)| *v == Some(i as u32)));
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    ///
    /// # Panics
    /// If `keys` and `out` differ in length.
    pub fn lookup_bulk_sub(&self, keys: &[K], out: &mut [Option<V>], b: usize) -> usize {
        use core::mem::MaybeUninit;
        assert_eq!(keys.len(), out.len(), "keys and out differ in length");
        let b = b.clamp(1, MAX_SUB_BATCH);
        // Per key of a sub-batch: its tag and primary bucket (phase 1); the keys whose
        // secondary bucket phase 3 searches (index into the sub-batch, bucket). Left
        // uninitialised (zeroing them would cost more than a lookup's worth of stores per
        // sub-batch): each phase reads only the entries the previous one wrote.
        let mut tags = [0u16; MAX_SUB_BATCH];
        let mut prim: [MaybeUninit<&Bucket<K, V, N>>; MAX_SUB_BATCH] =
            [const { MaybeUninit::uninit() }; MAX_SUB_BATCH];
        let mut second: [MaybeUninit<(u8, &Bucket<K, V, N>)>; MAX_SUB_BATCH] =
            [const { MaybeUninit::uninit() }; MAX_SUB_BATCH];
        let mut hits = 0;
        for (kc, oc) in keys.chunks(b).zip(out.chunks_mut(b)) {
            let ts = &mut tags[..kc.len()];
            let ps = &mut prim[..kc.len()];
            for ((t, p), k) in ts.iter_mut().zip(ps.iter_mut()).zip(kc) {
                let h = self.hash(k);
                let bk = &self.buckets[self.primary(h)];
                Self::prefetch_ref(bk);
                *t = h.tag();
                p.write(bk);
            }
            let mut n2 = 0;
            for (i, ((k, o), (&t, p))) in kc
                .iter()
                .zip(oc.iter_mut())
                .zip(ts.iter().zip(ps.iter()))
                .enumerate()
            {
                // SAFETY: the loop above wrote `prim[..kc.len()]`, all of `ps`.
                let bk = unsafe { p.assume_init() };
                let v = bk.find(t, k);
                *o = v;
                hits += usize::from(v.is_some());
                if v.is_none() && bk.displaced != 0 {
                    // Rare (keys of full buckets): hash again rather than keep every hash.
                    let h = self.hash(k);
                    let sb = &self.buckets[self.secondary(h, self.primary(h))];
                    Self::prefetch_ref(sb);
                    // `i < b <= 256`: the index fits a byte; `n2 <= i`.
                    second[n2].write((i as u8, sb));
                    n2 += 1;
                }
            }
            for s in &second[..n2] {
                // SAFETY: the loop above wrote `second[..n2]`.
                let (i, sb) = unsafe { s.assume_init() };
                let i = usize::from(i);
                let v = sb.find(ts[i], &kc[i]);
                hits += usize::from(v.is_some());
                oc[i] = v;
            }
        }
        hits
    }

    /// The same results as [`lookup_bulk`](Self::lookup_bulk) without the prefetch phase:
    /// one [`lookup`](Self::lookup) per key, in order (the baseline for the prefetch gain).
    ///
    /// # Panics
    /// If `keys` and `out` differ in length.
    pub fn lookup_bulk_no_prefetch(&self, keys: &[K], out: &mut [Option<V>]) -> usize {
        assert_eq!(keys.len(), out.len(), "keys and out differ in length");
        let mut hits = 0;
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.lookup(k);
            hits += usize::from(o.is_some());
        }
        hits
    }

    /// Where `key` lives: (bucket, slot).
    fn locate(&self, key: &K, h: Hashed) -> Option<(usize, usize)> {
        let tag = h.tag();
        let p = self.primary(h);
        if let Some(i) = self.buckets[p].position(tag, key) {
            return Some((p, i));
        }
        if self.buckets[p].displaced == 0 {
            return None;
        }
        let s = self.secondary(h, p);
        self.buckets[s].position(tag, key).map(|i| (s, i))
    }

    /// Inserts `key → value`, or replaces the value of a present key. Returns the previous
    /// value, if any.
    ///
    /// # Errors
    /// [`HashError::Full`] if `key` is new and the table holds [`capacity`](Self::capacity)
    /// keys; [`HashError::NoSlot`] if no bounded displacement path frees a slot for it. In
    /// both cases the table is unchanged.
    ///
    /// ```
    /// use pktvec_lookup::hash::{HashError, HashTable, NameTable, Name};
    /// let mut t: NameTable = HashTable::new(2)?;
    /// assert_eq!(t.insert(Name::try_from("/a").unwrap(), 1)?, None);
    /// assert_eq!(t.insert(Name::try_from("/a").unwrap(), 5)?, Some(1));
    /// t.insert(Name::try_from("/b").unwrap(), 2)?;
    /// assert_eq!(t.insert(Name::try_from("/c").unwrap(), 3), Err(HashError::Full { capacity: 2 }));
    /// assert_eq!(t.lookup(&Name::try_from("/a").unwrap()), Some(5));
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn insert(&mut self, key: K, value: V) -> Result<Option<V>, HashError> {
        let h = self.hash(&key);
        if let Some((b, i)) = self.locate(&key, h) {
            return Ok(Some(core::mem::replace(
                &mut self.buckets[b].vals[i],
                value,
            )));
        }
        if self.len >= self.capacity {
            return Err(HashError::Full {
                capacity: self.capacity,
            });
        }
        let p = self.primary(h);
        let s = self.secondary(h, p);
        let (b, i) = if let Some(i) = self.buckets[p].free_slot() {
            (p, i)
        } else if let Some(i) = self.buckets[s].free_slot() {
            (s, i)
        } else {
            self.make_room(p, s).ok_or(HashError::NoSlot)?
        };
        if b != p {
            let d = &mut self.buckets[p].displaced;
            *d = d.saturating_add(1);
        }
        let bk = &mut self.buckets[b];
        bk.tags[i] = h.tag();
        bk.keys[i] = key;
        bk.vals[i] = value;
        self.len += 1;
        Ok(None)
    }

    /// Replaces the value of `key` if present (never inserts). Returns the previous value.
    ///
    /// ```
    /// use pktvec_lookup::hash::{HashTable, MacTable};
    /// use pktvec_packet::wire::MacAddr;
    /// let mut t: MacTable = HashTable::new(8)?;
    /// let m = MacAddr::new([2, 0, 0, 0, 0, 9]);
    /// assert_eq!(t.update(&m, 1), None);
    /// assert!(t.is_empty());
    /// t.insert(m, 1)?;
    /// assert_eq!(t.update(&m, 2), Some(1));
    /// assert_eq!(t.lookup(&m), Some(2));
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn update(&mut self, key: &K, value: V) -> Option<V> {
        let h = self.hash(key);
        let (b, i) = self.locate(key, h)?;
        Some(core::mem::replace(&mut self.buckets[b].vals[i], value))
    }

    /// Removes `key`; returns its value if it was present.
    ///
    /// ```
    /// use pktvec_lookup::hash::{HashTable, MacTable};
    /// use pktvec_packet::wire::MacAddr;
    /// let mut t: MacTable = HashTable::new(8)?;
    /// let m = MacAddr::new([2, 0, 0, 0, 0, 9]);
    /// t.insert(m, 7)?;
    /// assert_eq!(t.remove(&m), Some(7));
    /// assert_eq!(t.remove(&m), None);
    /// assert_eq!(t.lookup(&m), None);
    /// # Ok::<(), pktvec_lookup::hash::HashError>(())
    /// ```
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let h = self.hash(key);
        let (b, i) = self.locate(key, h)?;
        let v = self.buckets[b].vals[i];
        self.buckets[b].clear_slot(i);
        let p = self.primary(h);
        if b != p {
            let d = &mut self.buckets[p].displaced;
            if *d != u16::MAX {
                *d -= 1;
            }
        }
        self.len -= 1;
        Some(v)
    }

    /// Removes every key (keeps the memory).
    pub fn clear(&mut self) {
        self.buckets.fill(Bucket::empty());
        self.len = 0;
    }

    /// Every `(key, value)`, in bucket order.
    pub fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.buckets.iter().flat_map(|b| {
            (0..N)
                .filter(move |&i| b.tags[i] != 0)
                .map(move |i| (b.keys[i], b.vals[i]))
        })
    }

    /// Occupancy counters (walks the whole table: O(buckets)).
    pub fn stats(&self) -> HashStats {
        let mut in_secondary = 0;
        for (bi, b) in self.buckets.iter().enumerate() {
            for i in 0..N {
                if b.tags[i] != 0 && self.primary(self.hash(&b.keys[i])) != bi {
                    in_secondary += 1;
                }
            }
        }
        HashStats {
            len: self.len,
            capacity: self.capacity,
            buckets: self.buckets.len(),
            slots_per_bucket: N,
            bucket_bytes: Self::bucket_bytes(),
            memory_bytes: self.memory_bytes(),
            in_secondary,
            max_displaced: self.buckets.iter().map(|b| b.displaced).max().unwrap_or(0),
        }
    }

    /// Checks the table's invariants (every key in one of its two buckets under its tag,
    /// displaced counters exact, length right); for tests. Returns a description of the
    /// first violation.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut displaced = vec![0u32; self.buckets.len()];
        let mut n = 0;
        for (bi, b) in self.buckets.iter().enumerate() {
            for i in 0..N {
                if b.tags[i] == 0 {
                    continue;
                }
                n += 1;
                let h = self.hash(&b.keys[i]);
                if h.tag() != b.tags[i] {
                    return Err(format!("bucket {bi} slot {i}: wrong tag"));
                }
                let p = self.primary(h);
                if bi != p {
                    if bi != self.secondary(h, p) {
                        return Err(format!("bucket {bi} slot {i}: key in neither bucket"));
                    }
                    displaced[p] += 1;
                }
            }
        }
        if n != self.len {
            return Err(format!("len {} but {n} keys stored", self.len));
        }
        for (bi, b) in self.buckets.iter().enumerate() {
            let want = displaced[bi].min(u32::from(u16::MAX)) as u16;
            if b.displaced != want && b.displaced != u16::MAX {
                return Err(format!(
                    "bucket {bi}: displaced {} but {want} keys displaced",
                    b.displaced
                ));
            }
        }
        Ok(())
    }

    /// Breadth-first search for a path of displacements that frees a slot in bucket `p`
    /// or `s` (both full), then performs the moves. Returns the freed (bucket, slot), or
    /// `None` (table unchanged) if no bucket within [`MAX_CUCKOO_NODES`] has room.
    fn make_room(&mut self, p: usize, s: usize) -> Option<(usize, usize)> {
        /// A bucket reached by moving the key in `slot` of the parent node's bucket.
        #[derive(Clone, Copy)]
        struct Node {
            bucket: usize,
            parent: u16,
            slot: u8,
        }
        const ROOT: u16 = u16::MAX;
        let mut q = [Node {
            bucket: 0,
            parent: ROOT,
            slot: 0,
        }; MAX_CUCKOO_NODES];
        q[0].bucket = p;
        q[1].bucket = s;
        let (mut head, mut tail) = (0usize, 2usize);
        while head < tail {
            let node = q[head];
            for slot in 0..N {
                let key = self.buckets[node.bucket].keys[slot];
                let alt = self.other_bucket(self.hash(&key), node.bucket);
                // A bucket may appear only once on a path, or the moves would undo
                // each other.
                let mut on_path = false;
                let mut a = head as u16;
                loop {
                    if q[usize::from(a)].bucket == alt {
                        on_path = true;
                        break;
                    }
                    a = q[usize::from(a)].parent;
                    if a == ROOT {
                        break;
                    }
                }
                if on_path {
                    continue;
                }
                if let Some(free) = self.buckets[alt].free_slot() {
                    // Move keys backwards along the path, from the free slot to the root.
                    let (mut to_b, mut to_i) = (alt, free);
                    let (mut from_b, mut from_i) = (node.bucket, slot);
                    let mut cur = head as u16;
                    loop {
                        self.move_entry(from_b, from_i, to_b, to_i);
                        let n = q[usize::from(cur)];
                        if n.parent == ROOT {
                            return Some((from_b, from_i));
                        }
                        (to_b, to_i) = (from_b, from_i);
                        (from_b, from_i) = (q[usize::from(n.parent)].bucket, usize::from(n.slot));
                        cur = n.parent;
                    }
                }
                if tail < MAX_CUCKOO_NODES {
                    q[tail] = Node {
                        bucket: alt,
                        parent: head as u16,
                        slot: slot as u8,
                    };
                    tail += 1;
                }
            }
            head += 1;
        }
        None
    }

    /// Moves the entry in (`fb`, `fi`) to the empty slot (`tb`, `ti`), its other bucket,
    /// keeping the displaced counter of its primary bucket exact.
    fn move_entry(&mut self, fb: usize, fi: usize, tb: usize, ti: usize) {
        let src = self.buckets[fb];
        let (tag, key, val) = (src.tags[fi], src.keys[fi], src.vals[fi]);
        let p = self.primary(self.hash(&key));
        debug_assert_eq!(self.buckets[tb].tags[ti], 0);
        debug_assert_eq!(self.other_bucket(self.hash(&key), fb), tb);
        let dst = &mut self.buckets[tb];
        dst.tags[ti] = tag;
        dst.keys[ti] = key;
        dst.vals[ti] = val;
        self.buckets[fb].clear_slot(fi);
        let d = &mut self.buckets[p].displaced;
        if fb == p {
            *d = d.saturating_add(1);
        } else if *d != u16::MAX {
            *d -= 1;
        }
    }
}

/// Lookups of names by the bytes that hold them (a slice of a packet), with no 64-byte
/// [`Name`] built per lookup: the hash comes from [`hash_bytes`] or, for several prefixes
/// of one name, from a [`PrefixHasher`] in one pass; the search compares a stored key with
/// the slice only in slots whose 16-bit tag matches (the tag is a fingerprint of the hash,
/// which covers the length too, so other slots are rejected without reading their keys).
///
/// The longest-prefix pattern (the `ndn-lookup` node's):
///
/// ```
/// use pktvec_lookup::hash::{HashTable, Hashed, Name, NameTable};
/// let mut t: NameTable = HashTable::new(16)?;
/// t.insert(Name::new(b"/com/example")?, 1)?;
/// t.insert(Name::new(b"/com")?, 2)?;
///
/// let pkt = b"/com/example/video/1";
/// let ends = [4, 12, 18, 20]; // where each component ends
/// // Phase 1: every prefix hash in one pass, prefetch their buckets.
/// let mut hasher = t.prefix_hasher(pkt);
/// let hashes = ends.map(|e| Hashed(hasher.prefix(e)));
/// for &h in &hashes {
///     t.prefetch(h);
/// }
/// // Phase 2: longest first, stop at the first hit.
/// let hit = (0..ends.len())
///     .rev()
///     .find_map(|k| t.lookup_bytes_hashed(&pkt[..ends[k]], hashes[k]));
/// assert_eq!(hit, Some(1));
/// assert_eq!(t.lookup_bytes(b"/com"), Some(2));
/// assert_eq!(t.lookup_bytes(b"/co"), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<V: Copy + Default, const N: usize> HashTable<Name, V, N> {
    /// The hash of the name whose bytes are `bytes`: `self.hash(&Name::new(bytes)?)`
    /// without the copy (for any length; names longer than [`Name::MAX_LEN`] are never
    /// found).
    #[inline(always)]
    pub fn hash_name_bytes(&self, bytes: &[u8]) -> Hashed {
        Hashed(hash_bytes(bytes, self.seed))
    }

    /// A [`PrefixHasher`] under this table's seed: `Hashed(prefix_hasher(b).prefix(end))`
    /// is `hash_name_bytes(&b[..end])`, all prefixes in one pass over `b`.
    #[inline(always)]
    pub fn prefix_hasher<'a>(&self, bytes: &'a [u8]) -> PrefixHasher<'a> {
        PrefixHasher::new(bytes, self.seed)
    }

    /// Step 3 of a lookup by bytes: the value of the name whose bytes are `key`, given its
    /// hash `h` from [`hash_name_bytes`](Self::hash_name_bytes) or a
    /// [`prefix_hasher`](Self::prefix_hasher). The same answer as
    /// `lookup_hashed(&Name::new(key)?, h)`; `None` for keys longer than [`Name::MAX_LEN`].
    #[inline(always)]
    pub fn lookup_bytes_hashed(&self, key: &[u8], h: Hashed) -> Option<V> {
        self.lookup_hashed_by(h, |k| k.eq_bytes(key))
    }

    /// The value of the name whose bytes are `key`, if present (hash and search).
    #[inline]
    pub fn lookup_bytes(&self, key: &[u8]) -> Option<V> {
        self.lookup_bytes_hashed(key, self.hash_name_bytes(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSE2 tag compare equals the per-slot one for every width up to eight, with
    /// empty slots, repeated tags, and the searched tag anywhere or nowhere.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vector_tag_mask_equals_portable() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 9) as usize;
            // Tags from a small alphabet (0 = empty) so that matches are common.
            let tags: Vec<u16> = (0..len)
                .map(|i| [0, 1, 2, 0xffff, 0x8000][((x >> (8 + 3 * i)) % 5) as usize])
                .collect();
            for tag in [1, 2, 0xffff, 0x8000, 0x7fff] {
                assert_eq!(
                    simd::tag_mask8(&tags, tag),
                    tag_mask_portable(&tags, tag),
                    "{tags:?} {tag}"
                );
            }
        }
    }

    #[test]
    fn buckets_are_whole_lines() {
        assert_eq!(MacTable::<u32>::bucket_bytes(), 64);
        assert_eq!(FlowTable::<u32>::bucket_bytes(), 64);
        assert_eq!(Flow6Table::<u32>::bucket_bytes(), 192);
        assert_eq!(NameTable::<u32>::bucket_bytes(), 320);
        assert_eq!(HashTable::<[u8; 6], u32, 4>::bucket_bytes(), 64);
    }

    #[test]
    fn memory_for_64m_macs_fits() {
        // Sized, not allocated: 64M MAC entries need < 1 GiB.
        let nb = (64u128 << 20) * 100 / (5 * 90) + 1;
        let bytes = nb * 64;
        assert!(bytes < 1 << 30, "{bytes}");
    }

    #[test]
    fn fills_to_capacity_and_stays_consistent() {
        let mut t: MacTable = HashTable::new(5000).unwrap();
        for i in 0..5000u64 {
            let k = MacAddr::new(hash_u64(i, 1).to_le_bytes()[..6].try_into().unwrap());
            t.insert(k, i as u32).unwrap();
        }
        t.check_invariants().unwrap();
        let st = t.stats();
        assert_eq!(st.len, 5000);
        assert!(st.in_secondary > 0);
        let k = MacAddr::new([0xfe; 6]);
        assert_eq!(t.insert(k, 1), Err(HashError::Full { capacity: 5000 }));
        t.check_invariants().unwrap();
    }

    #[test]
    fn zero_capacity_rejects_everything() {
        let mut t: MacTable = HashTable::new(0).unwrap();
        assert_eq!(
            t.insert(MacAddr::ZERO, 1),
            Err(HashError::Full { capacity: 0 })
        );
        assert_eq!(t.lookup(&MacAddr::ZERO), None);
    }

    #[test]
    fn absurd_capacity_is_an_error() {
        assert!(matches!(
            MacTable::<u32>::new(usize::MAX),
            Err(HashError::InvalidCapacity(_))
        ));
    }
}
