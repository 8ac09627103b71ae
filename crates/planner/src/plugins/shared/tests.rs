use super::*;

#[test]
fn include_and_exclude() {
    let inc = Namespaces {
        include: vec!["a".into()],
        exclude: vec![],
    };
    assert!(inc.allows("a") && !inc.allows("b"));
    let exc = Namespaces {
        include: vec![],
        exclude: vec!["a".into()],
    };
    assert!(!exc.allows("a") && exc.allows("b"));
    let both = Namespaces {
        include: vec!["a".into()],
        exclude: vec!["b".into()],
    };
    assert_eq!(both.validate("namespaces").unwrap_err().path, "namespaces");
    assert!(namespace_allowed(&None, "x"));
}

#[test]
fn null_lists_are_empty_and_type_meta_is_accepted() {
    let ns: Namespaces = crate::framework::decode_args(
        &serde_json::json!({"include": null, "exclude": ["a"], "kind": "X"}),
    )
    .unwrap();
    assert!(ns.include.is_empty());
    assert_eq!(ns.exclude, vec!["a"]);
}

#[test]
fn priority_threshold_one_of() {
    let both = PriorityThreshold {
        value: Some(1),
        name: Some("x".into()),
    };
    assert!(both.validate("priorityThreshold").is_err());
    assert!(!PriorityThreshold::default().is_set());
}
