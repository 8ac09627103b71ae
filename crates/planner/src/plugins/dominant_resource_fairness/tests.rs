use super::*;
use crate::framework::args_from_json;
use serde_json::json;

#[test]
fn args_default_to_namespaces() {
    let a = args_from_json::<DominantResourceFairnessArgs>(&serde_json::Value::Null).unwrap();
    assert_eq!(a.tenant_label, None);
    let a = args_from_json::<DominantResourceFairnessArgs>(&json!({})).unwrap();
    assert_eq!(a.tenant_label, None);
}

#[test]
fn tenant_label_is_validated() {
    let a =
        args_from_json::<DominantResourceFairnessArgs>(&json!({"tenantLabel": "example.com/team"}))
            .unwrap();
    assert_eq!(a.tenant_label.as_deref(), Some("example.com/team"));
    for bad in ["", "-team", "a/b/c", "/team", "team!"] {
        let e = args_from_json::<DominantResourceFairnessArgs>(&json!({ "tenantLabel": bad }))
            .unwrap_err();
        assert_eq!(e.path, "tenantLabel", "{bad:?}");
    }
    let e = args_from_json::<DominantResourceFairnessArgs>(&json!({"tenantLabel": 5})).unwrap_err();
    assert_eq!(e.path, "tenantLabel");
    let e =
        args_from_json::<DominantResourceFairnessArgs>(&json!({"tenantLabels": "x"})).unwrap_err();
    assert!(e.message.contains("unknown field"), "{e}");
}
