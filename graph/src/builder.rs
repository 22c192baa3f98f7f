//! [`GraphBuilder`]: add nodes by name, rewire arcs, validate, build.
//!
//! Every problem is reported as a [`GraphError`] naming the culprit and the names that
//! would have been valid; building never panics.
//!
//! ```
//! use pktvec_graph::{builtin::{NullSink, PacketSource, SourceNext}, GraphBuilder, GraphConfig, GraphError};
//! use pktvec_packet::{BufferPool, PoolConfig};
//!
//! let mut b = GraphBuilder::new(GraphConfig::default());
//! b.add("source", PacketSource::new(vec![vec![0; 60]]));
//! b.add("out", NullSink);
//! // The source's arc defaults to "ethernet-input", which this graph does not have.
//! let err = b.build(BufferPool::new(PoolConfig::default()).unwrap()).unwrap_err();
//! assert!(matches!(err, GraphError::UnknownNext { .. }));
//! assert!(err.to_string().contains("ethernet-input"));
//! assert!(err.to_string().contains("known nodes: drop, out, source"));
//! ```

use crate::builtin::{DropNode, DROP_NODE};
use crate::graph::{DynNode, Graph, Names, NodeSlot};
use crate::node::{ErrorReason, Next, Node, NodeKind};
use crate::runtime::CallSite;
use crate::GraphConfig;
use pktvec_packet::BufferPool;
use std::any::TypeId;
use std::collections::HashMap;

/// Why a graph cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// Two nodes share a name.
    #[error("duplicate node name `{name}`{}", if name == DROP_NODE { " (the builder adds the drop node itself)" } else { "" })]
    DuplicateNode {
        /// The name.
        name: String,
    },
    /// `set_next` names a node that was not added.
    #[error("no node named `{name}`; known nodes: {}", known.join(", "))]
    UnknownNode {
        /// The name.
        name: String,
        /// Names of the nodes added.
        known: Vec<String>,
    },
    /// An arc leads to a node that does not exist.
    #[error("node `{node}`: next arc `{arc}` leads to unknown node `{target}`; known nodes: {}", known.join(", "))]
    UnknownNext {
        /// The node whose arc is broken.
        node: String,
        /// The arc (variant name).
        arc: String,
        /// The missing target.
        target: String,
        /// Names of the nodes added.
        known: Vec<String>,
    },
    /// An arc leads to an input node, which never takes packets from other nodes.
    #[error("node `{node}`: next arc `{arc}` leads to input node `{target}`")]
    ArcToInput {
        /// The node whose arc is wrong.
        node: String,
        /// The arc.
        arc: String,
        /// The input node.
        target: String,
    },
    /// `set_next` was given an arc of another node type.
    #[error("node `{node}`: arc type `{given}` is not this node's next type `{expected}`")]
    ArcTypeMismatch {
        /// The node.
        node: String,
        /// Type given.
        given: &'static str,
        /// The node's `Next` type.
        expected: &'static str,
    },
    /// A non-sink node has no next arc.
    #[error("node `{node}` has no next arc and is not a sink: its packets have no way out")]
    NoWayOut {
        /// The node.
        node: String,
    },
    /// A node has more drop reasons than error indices can address.
    #[error("too many drop reasons in the graph (more than 65535)")]
    TooManyErrors,
    /// The configuration is out of range.
    #[error("invalid graph configuration: {0}")]
    BadConfig(String),
}

struct PendingNode {
    name: String,
    node: Box<dyn DynNode>,
    kind: NodeKind,
    targets: Vec<String>,
    arc_names: &'static [&'static str],
    next_type: (TypeId, &'static str),
    reasons: &'static [&'static str],
    created: &'static [&'static str],
}

/// Collects nodes and arcs, then builds a [`Graph`].
///
/// [`add`](Self::add) a node under a name; its arcs lead to the nodes its
/// [`Next`] type names by default, [`set_next`](Self::set_next) points one
/// elsewhere. [`build`](Self::build) checks that every arc leads to a node of the graph and
/// every non-sink node has a way out, then gives the [`Graph`] its buffer pool. The `drop`
/// node is always there.
///
/// ```
/// use pktvec_graph::builtin::{NullSink, PacketSource, SourceNext};
/// use pktvec_graph::{GraphBuilder, GraphConfig};
/// use pktvec_packet::{BufferPool, PoolConfig};
///
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("source", PacketSource::new(vec![vec![0u8; 60]]).with_limit(1000))
///     .add("tx", NullSink)
///     .set_next("source", SourceNext::Out, "tx");
/// let mut graph = b.build(BufferPool::new(PoolConfig::default())?)?;
/// assert_eq!(graph.run_until_idle(), 1000);
///
/// // An arc to a node that was never added is refused when building.
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("source", PacketSource::new(vec![vec![0u8; 60]]))
///     .set_next("source", SourceNext::Out, "nowhere");
/// let err = b.build(BufferPool::new(PoolConfig::default())?).err().unwrap();
/// assert!(err.to_string().contains("nowhere"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct GraphBuilder {
    cfg: GraphConfig,
    nodes: Vec<PendingNode>,
    overrides: Vec<(String, u16, String, TypeId, &'static str)>,
}

impl GraphBuilder {
    /// A builder with these settings.
    pub fn new(cfg: GraphConfig) -> Self {
        GraphBuilder {
            cfg,
            nodes: Vec::new(),
            overrides: Vec::new(),
        }
    }

    /// Adds a node under a name (names must be unique; `"drop"` is taken).
    pub fn add<N: Node>(&mut self, name: impl Into<String>, node: N) -> &mut Self {
        self.nodes.push(PendingNode {
            name: name.into(),
            node: Box::new(node),
            kind: N::KIND,
            targets: N::Next::TARGETS.iter().map(|s| s.to_string()).collect(),
            arc_names: N::Next::NAMES,
            next_type: (TypeId::of::<N::Next>(), std::any::type_name::<N::Next>()),
            reasons: N::Error::REASONS,
            created: N::CREATED,
        });
        self
    }

    /// Points arc `arc` of node `node` at node `target` instead of its default target
    /// (VPP's `vlib_node_add_next`, rte_graph's `rte_node_edge_update`).
    pub fn set_next<A: Next>(&mut self, node: &str, arc: A, target: &str) -> &mut Self {
        self.overrides.push((
            node.to_string(),
            arc.index(),
            target.to_string(),
            TypeId::of::<A>(),
            std::any::type_name::<A>(),
        ));
        self
    }

    /// Validates and builds the graph over a buffer pool.
    pub fn build(mut self, pool: BufferPool) -> Result<Graph, GraphError> {
        self.cfg.validate()?;
        if self.nodes.iter().any(|n| n.name == DROP_NODE) {
            return Err(GraphError::DuplicateNode {
                name: DROP_NODE.into(),
            });
        }
        self.add(DROP_NODE, DropNode);
        let mut ids: HashMap<String, u32> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if ids.insert(n.name.clone(), i as u32).is_some() {
                return Err(GraphError::DuplicateNode {
                    name: n.name.clone(),
                });
            }
        }
        let known = || {
            let mut k: Vec<String> = ids.keys().cloned().collect();
            k.sort();
            k
        };
        for (node, arc, target, ty, ty_name) in std::mem::take(&mut self.overrides) {
            let Some(&id) = ids.get(&node) else {
                return Err(GraphError::UnknownNode {
                    name: node,
                    known: known(),
                });
            };
            let n = &mut self.nodes[id as usize];
            if n.next_type.0 != ty {
                return Err(GraphError::ArcTypeMismatch {
                    node,
                    given: ty_name,
                    expected: n.next_type.1,
                });
            }
            n.targets[arc as usize] = target;
        }
        let drop_id = ids[DROP_NODE];
        let mut slots = Vec::with_capacity(self.nodes.len());
        let mut error_names: Vec<(String, String)> =
            vec![(DROP_NODE.to_string(), "unspecified reason".to_string())];
        let mut created_names: Vec<(String, String)> = Vec::new();
        let mut created_base: Vec<u32> = Vec::with_capacity(self.nodes.len() + 1);
        for n in self.nodes {
            if n.kind != NodeKind::Sink && n.targets.is_empty() {
                return Err(GraphError::NoWayOut { node: n.name });
            }
            let mut arcs = Vec::with_capacity(n.targets.len() + 1);
            for (i, t) in n.targets.iter().enumerate() {
                let Some(&tid) = ids.get(t) else {
                    return Err(GraphError::UnknownNext {
                        node: n.name.clone(),
                        arc: n.arc_names[i].to_string(),
                        target: t.clone(),
                        known: known(),
                    });
                };
                arcs.push(tid);
            }
            arcs.push(drop_id);
            let error_base = error_names.len();
            error_names.push((n.name.clone(), "invalid next arc".to_string()));
            for r in n.reasons {
                error_names.push((n.name.clone(), r.to_string()));
            }
            created_base.push(created_names.len() as u32);
            for r in n.created {
                created_names.push((n.name.clone(), r.to_string()));
            }
            if error_names.len() > u16::MAX as usize {
                return Err(GraphError::TooManyErrors);
            }
            slots.push(NodeSlot {
                name: n.name,
                kind: n.kind,
                node: n.node,
                site: CallSite {
                    arcs: arcs.into_boxed_slice(),
                    id: slots.len() as u32,
                    error_base: error_base as u16,
                    is_input: n.kind == NodeKind::Input,
                },
                arc_names: n.arc_names,
                stats: Default::default(),
            });
        }
        for s in &slots {
            for (i, &t) in s.site.arcs.iter().enumerate() {
                if slots[t as usize].kind == NodeKind::Input {
                    return Err(GraphError::ArcToInput {
                        node: s.name.clone(),
                        arc: s.arc_names.get(i).copied().unwrap_or("drop").to_string(),
                        target: slots[t as usize].name.clone(),
                    });
                }
            }
        }
        created_base.push(created_names.len() as u32);
        Ok(Graph::new(
            self.cfg,
            slots,
            Names {
                errors: error_names,
                created: created_names,
                created_base,
            },
            drop_id,
            pool,
        ))
    }
}
