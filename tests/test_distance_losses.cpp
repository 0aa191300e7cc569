// normalize, cosine_similarity, pairwise_distance, cdist (ops/distance.cpp) and the margin and
// embedding losses (ops/margin_loss.cpp) against torch.nn.functional 1.13: values and input
// gradients (the literals are what it printed: tests/torch_refs/distance_losses.py), zero vectors,
// errors, autocast rows, the nn modules, and CUDA against the CPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cuda_checks.h"
#include "gradcheck.h"
#include "sine_operands.h"

using namespace minidl;

namespace {
struct Expected {
  const char* name;
  Shape shape;
  std::vector<double> value;
  std::vector<std::vector<double>> grads;  // of (value * weights).sum()
};

// Printed by tests/torch_refs/distance_losses.py with torch 1.13.0
const std::vector<Expected> kExpected = {
    {"normalize", {4, 3}, {0.0609063687092237, 0.4969111904318216, 0.8656614136452462, 0.5544331050674666, 0.6042429187689995, 0.5722712880468214, 0.8379810230119922, 0.5264488398016716, 0.14366427580734545, -0.22822499879992153, -0.552367742124588, -0.8017501028269098}, {{1.1193751580368274, 0.3820400165257146, -0.29805768333513716, 0.10774300890713318, -0.011483438583527794, -0.09225957274683089, 0.06547210889165389, -0.059049766186412014, -0.16550881389796698, -0.10683672528525912, -0.012463877900349363, 0.03899900415815549}}},
    {"normalize p1 dim0", {4, 3}, {0.025392144698442292, 0.1658026301676285, 0.2713886762722235, 0.46578599719887814, 0.4062794026790864, 0.3615315620067955, 0.388842071284561, 0.1955110006647661, 0.05012966915165679, -0.11997978681811865, -0.23240696648851902, -0.31695009256932427}, {{0.2243947690564509, 0.16577448241468148, 0.10595460678159829, 0.12686226985346466, 0.039491990827921236, -0.052792956114334294, -0.12828811397041348, -0.19099402148719835, -0.28452683396368195, 0.1242269031633915, 0.026630851367198727, -0.01449652663512746}}},
    {"cosine_similarity", {4}, {0.9939105219621693, 0.9995217298983599, 0.993292117916611, 0.9974522912618402}, {{0.12112965033285243, 0.0461754749778126, -0.03502833429652896, 0.013062280293514195, 0.00013941422115781865, -0.012802320912010556, 0.039237049252779266, -0.0342966196592831, -0.10318840199317758, -0.04873365237297103, -0.013651748393873009, 0.023277855687089177}, {-0.10493934194830398, -0.033848157696943715, 0.041824215909812335, -0.012753052989027347, 0.000202593229038317, 0.013130819403961491, -0.03170713554376692, 0.04692722838467778, 0.11921021209683634, 0.043125282092223244, 0.010325927470443808, -0.02387099299334494}}},
    {"cosine_similarity dim0 broadcast", {3}, {0.6138990651423413, 0.5014315559811194, 0.330193860285546}, {{0.3896978327418874, 0.25650691346874793, 0.21291364336557683, 0.031247390431116573, 0.08812423709756784, 0.17912818383537707, 0.09387447779965985, 0.23570500864155186, 0.295841288402096, 0.5080206314272546, 0.5353346644460506, 0.4334224001328371}, {-6.661338147750939e-16, 1.1102230246251565e-16, -1.1102230246251565e-16}}},
    {"pairwise_distance", {4}, {0.14928244339868663, 0.051139391188167196, 0.15049629736653386, 0.13452560730282911}, {{-0.6662401883207382, -0.5969803464842716, -0.4469211086734061, -0.6748423428410999, 0.017613389303479554, 0.7076878202866949, 0.413043148657202, 0.5456755945198497, 0.6044542297092534, 0.5756077125923486, 0.4749025068567788, 0.30992228763755614}, {0.6662401883207382, 0.5969803464842716, 0.4469211086734061, 0.6748423428410999, -0.017613389303479554, -0.7076878202866949, -0.413043148657202, -0.5456755945198497, -0.6044542297092534, -0.5756077125923486, -0.4749025068567788, -0.30992228763755614}}},
    {"pairwise_distance p1 keepdim", {4, 1}, {0.2552941230963035, 0.07321086457432521, 0.25764384407324203, 0.22649353806361514}, {{-1.0, -1.0, -1.0, -0.9780309147241483, 0.9780309147241483, 0.9780309147241483, 0.9130889403123083, 0.9130889403123083, 0.9130889403123083, 0.8080275083121519, 0.8080275083121519, 0.8080275083121519}, {1.0, 1.0, 1.0, 0.9780309147241483, -0.9780309147241483, -0.9780309147241483, -0.9130889403123083, -0.9130889403123083, -0.9130889403123083, -0.8080275083121519, -0.8080275083121519, -0.8080275083121519}}},
    {"cdist", {4, 5}, {0.1492841535405827, 1.0963844474589028, 0.9380849308433301, 1.9491377138649293, 2.304595653542532, 0.9326201152951622, 0.05113933962517035, 1.1202227915320555, 2.7606281930330057, 3.2594906109063553, 0.892605538197535, 0.9528977827223833, 0.15049458540541596, 1.8733184654673785, 2.4676670943672767, 1.967656738262345, 2.6267898918174324, 1.5935053505164127, 0.1345239236571654, 0.8547799562871274}, {{-1.6407423292996284, -0.2696528423033646, 1.1379328918999922, -0.015019522799575885, 0.07345424294700334, 0.15198632150013613, -1.818865981359799, -1.2402975486239318, -0.4938606611806438, 0.01329147897677918, 0.8960149038553564, 1.6574669148930434}, {0.4092307213101549, -0.22306484127371962, -0.8251696240356727, 0.4421170268710894, -0.4279947062496499, -1.2401793636934304, 0.4452395918830804, -0.13463142740655704, -0.6962807145812948, 0.9998677094977263, 0.6518851126341169, 0.21567292390678627, 1.1648813049201732, 0.6742871064207467, 0.09243131129108367}}},
    {"cdist p1 batched", {2, 3, 4}, {0.1885786479870875, 1.271422466787091, 1.4498057788730656, 0.6641742431503772, 0.9808381108720386, 0.10200570792796493, 0.2954003839061098, 0.5389938640309839, 1.2991497626415545, 0.22788645164775345, 0.03792263175557631, 0.8573055158004997, 1.5465753573021828, 2.778008730411395, 3.2081980798916745, 2.612127324565505, 0.19545566123756744, 1.4268890343467797, 1.8570783838270593, 1.2610076285008895, 1.1007727025694343, 0.13066067053977803, 0.5608500200200575, 0.5226265267213528}, {{-3.6991473633486085, -2.0830923467243045, -0.035299397041776454, 0.5763344197148023, -1.601343051793172, -0.9737219330754073, -3.709150432480685, -3.709150432480685, -3.3500970064749658, -3.3500970064749658, 0.21754164559351014, -0.017138489558400763}, {0.44152392639856297, 0.44152392639856297, 1.7894125219747574, 1.161791403256993, 1.7237519532904553, 1.1121181365338764, 1.381101410519781, -0.23495360610452265, 1.2989349914316006, 1.2989349914316006, 2.123914982030347, 2.123914982030347, 1.8750523912299268, 1.8750523912299268, 1.5438034286702669, 1.7784835638221779}}},
    {"margin_ranking_loss", {}, {0.21044263017730536}, {{-0.25, 0.25, -0.25, 0.25}, {0.25, -0.25, 0.25, -0.25}}},
    {"hinge_embedding_loss", {}, {0.2290684400022526}, {{0.08333333333333333, -0.08333333333333333, 0.08333333333333333, 0.0, 0.0, 0.08333333333333333, 0.08333333333333333, 0.08333333333333333, -0.08333333333333333, -0.08333333333333333, 0.08333333333333333, 0.08333333333333333}}},
    {"soft_margin_loss sum", {}, {9.296775649547346}, {{-0.48750780794602894, 0.6005507561289976, -0.3295207846004112, 0.7143902695175783, 0.730894955293567, -0.27962951261819413, -0.3174847788020728, -0.3820578955043823, 0.5327563146632991, 0.44123402790926997, -0.6391233631912765, -0.69627228529796}}},
    {"multilabel_soft_margin_loss", {}, {0.877854914164647}, {{-0.020312825331084538, 0.05004589634408313, -0.054920130766735194, 0.029766261229899095, 0.060907912941130585, -0.04660491876969902, -0.013228532450086367, -0.03183815795869852, 0.08879271911054987, 0.018384751162886247, -0.053260280265939694, -0.11604538088299332}}},
    {"cosine_embedding_loss", {}, {0.7524428453207215}, {{-0.030282412583200666, -0.011543868744661373, 0.008757083573731506, 0.0033389231610622266, 3.563645565535234e-05, -0.0032724734768463104, -0.010742942861705823, 0.009390273538653987, 0.028252560467321518, -0.015077968222546312, -0.0042237882540594185, 0.007202061639928037}, {0.026234835486992774, 0.008462039424062817, -0.010456053977692614, -0.003259879825090864, 5.178599830518715e-05, 0.0033564428297697263, 0.008681283427694864, -0.01284848230924468, -0.032639266240583206, 0.013342764215451337, 0.0031947945348107104, -0.007385575598657934}}},
    {"triplet_margin_loss", {}, {1.3810400574458241}, {{0.0029356602038848323, -0.0004831283734071101, -0.003836417331036013, -0.025422223495422808, -0.02395710122159693, -0.019249162046112628, -0.003559708968134262, -0.000384551951948614, 0.0028427668878883428, -0.003313048378909389, 0.0008921359896150727, 0.004976695102451856}, {0.16656004708018454, 0.1492450866210679, 0.11173027716835153, 0.1725002586016, -0.004502257811668299, -0.1808960764001762, -0.11308951691932848, -0.14940373561342493, -0.16549708440847752, -0.1780903826512994, -0.14693265451097662, -0.09588853239815351}, {-0.16949570728406937, -0.14876195824766078, -0.10789385983731552, -0.1470780351061772, 0.028459359033265227, 0.20014523844628881, 0.11664922588746274, 0.14978828756537355, 0.16265431752058918, 0.18140343103020878, 0.14604051852136155, 0.09091183729570165}}},
    {"triplet_margin_loss swap p1 none", {4}, {0.7142220425481146, 0.6904534088758008, 0.688811828983487, 0.7186226368845592}, {{-1.0, -1.0, -1.0, -0.9780309147241483, 0.9780309147241483, 0.9780309147241483, 0.9130889403123083, 0.9130889403123083, 0.9130889403123083, 0.8080275083121519, 0.8080275083121519, 0.8080275083121519}, {2.0, 2.0, 2.0, 1.9560618294482965, -1.9560618294482965, -1.9560618294482965, -1.8261778806246165, -1.8261778806246165, -1.8261778806246165, -1.6160550166243037, -1.6160550166243037, -1.6160550166243037}, {-1.0, -1.0, -1.0, -0.9780309147241483, 0.9780309147241483, 0.9780309147241483, 0.9130889403123083, 0.9130889403123083, 0.9130889403123083, 0.8080275083121519, 0.8080275083121519, 0.8080275083121519}}},
    {"multi_margin_loss", {}, {0.8189959073408231}, {{-0.16666666666666666, 0.08333333333333333, 0.08333333333333333, 0.08333333333333333, 0.08333333333333333, -0.16666666666666666, 0.08333333333333333, -0.16666666666666666, 0.08333333333333333, 0.08333333333333333, 0.08333333333333333, -0.16666666666666666}}},
    {"multi_margin_loss p2 weight sum", {}, {1.502376779508813}, {{-1.3454369246238809, 0.5718541891925946, 0.7735827354312863, 0.15683434036145077, 0.18428928586135385, -0.3411236262228046, 1.0460431167208069, -1.246563886269521, 0.20052076954871412, 0.364484617638158, 0.2526826182896757, -0.6171672359278337}}},
    {"poisson_nll_loss", {}, {1.2324890648787272}, {{0.08760409982170445, 0.041953914325708094, 0.0028924948827927233, -0.04155989412810909, 0.18466841749191942, -0.11865329692941509, 0.09581310841976419, 0.05145036301366217, 0.09501756995021222, -0.10086183215215183, -0.3696130698192089, -0.21364835506700466}}},
    {"poisson_nll_loss no log full", {}, {2.2419155060737084}, {{0.08333333333333333, -0.08078604853267206, -0.12233827963210485, -0.16253530670583577, 0.045425872087908194, -0.2352495799915183, -0.012966262718866112, -0.06014133474620638, 0.08333333333333333, 0.4124692062876905, 0.5371113659571585, 0.18559688423271226}}},
};

using testing::check_printed_values;
Tensor operand(int k, const Shape& shape) { return testing::sine_operand(k, shape); }
Tensor weights(const Shape& shape) { return testing::cosine_weights(shape); }
Tensor f64(const std::vector<double>& v, const Shape& s) { return from_vector(v, s); }
Tensor pm() { return f64({1, -1, 1, -1}, {4}); }
Tensor signs() { return f64({1, -1, 1, -1, -1, 1, 1, 1, -1, -1, 1, 1}, {4, 3}); }
Tensor counts() { return f64({0, 1, 2, 3, 0.5, 4, 1, 1, 0, 2, 5, 3}, {4, 3}); }

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
struct Case {
  std::vector<Shape> shapes;
  Fn fn;
};
// The same calls as the script's, by name.
const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> c = {
      {"normalize", {{{4, 3}}, [](const auto& x) { return normalize(x[0]); }}},
      {"normalize p1 dim0", {{{4, 3}}, [](const auto& x) { return normalize(x[0], 1.0, 0); }}},
      {"cosine_similarity", {{{4, 3}, {4, 3}}, [](const auto& x) { return cosine_similarity(x[0], x[1]); }}},
      {"cosine_similarity dim0 broadcast", {{{4, 3}, {1, 3}}, [](const auto& x) { return cosine_similarity(x[0], x[1], 0); }}},
      {"pairwise_distance", {{{4, 3}, {4, 3}}, [](const auto& x) { return pairwise_distance(x[0], x[1]); }}},
      {"pairwise_distance p1 keepdim", {{{4, 3}, {4, 3}}, [](const auto& x) { return pairwise_distance(x[0], x[1], 1.0, 1e-6, true); }}},
      {"cdist", {{{4, 3}, {5, 3}}, [](const auto& x) { return cdist(x[0], x[1]); }}},
      {"cdist p1 batched", {{{2, 3, 2}, {2, 4, 2}}, [](const auto& x) { return cdist(x[0], x[1], 1.0); }}},
      {"margin_ranking_loss", {{{4}, {4}}, [](const auto& x) { return margin_ranking_loss(x[0], x[1], pm(), 0.2); }}},
      {"hinge_embedding_loss", {{{4, 3}}, [](const auto& x) { return hinge_embedding_loss(x[0], signs(), 0.5); }}},
      {"soft_margin_loss sum", {{{4, 3}}, [](const auto& x) { return soft_margin_loss(x[0], signs(), Reduction::Sum); }}},
      {"multilabel_soft_margin_loss",
       {{{4, 3}}, [](const auto& x) { return multilabel_soft_margin_loss(x[0], eq(signs(), 1.0).to(DType::F64), f64({0.5, 1.0, 2.0}, {3})); }}},
      {"cosine_embedding_loss", {{{4, 3}, {4, 3}}, [](const auto& x) { return cosine_embedding_loss(x[0], x[1], pm(), -0.5); }}},
      {"triplet_margin_loss", {{{4, 3}, {4, 3}, {4, 3}}, [](const auto& x) { return triplet_margin_loss(x[0], x[1], x[2], 1.5); }}},
      {"triplet_margin_loss swap p1 none",
       {{{4, 3}, {4, 3}, {4, 3}},
        [](const auto& x) { return triplet_margin_loss(x[0], x[1], x[2], 0.7, 1.0, 1e-6, true, Reduction::None); }}},
      {"multi_margin_loss", {{{4, 3}}, [](const auto& x) { return multi_margin_loss(x[0], from_vector<int64_t>({0, 2, 1, 2})); }}},
      {"multi_margin_loss p2 weight sum",
       {{{4, 3}},
        [](const auto& x) {
          return multi_margin_loss(x[0], from_vector<int64_t>({0, 2, 1, 2}), 2, 0.5, f64({1.0, 2.0, 0.5}, {3}), Reduction::Sum);
        }}},
      {"poisson_nll_loss", {{{4, 3}}, [](const auto& x) { return poisson_nll_loss(x[0], counts()); }}},
      {"poisson_nll_loss no log full",
       {{{4, 3}}, [](const auto& x) { return poisson_nll_loss(add(abs(x[0]), 0.1), counts(), false, true); }}},
  };
  return c;
}

}  // namespace

TEST_CASE("distances and margin losses match torch.nn.functional: values and gradients", "[distance][loss]") {
  REQUIRE(cases().size() == kExpected.size());
  for (const Expected& e : kExpected) {
    INFO(e.name);
    const Case& c = cases().at(e.name);
    std::vector<Tensor> xs;
    for (size_t k = 0; k < c.shapes.size(); ++k) xs.push_back(operand(static_cast<int>(k), c.shapes[k]).requires_grad_());
    const Tensor y = c.fn(xs);
    CHECK(y.shape() == e.shape);
    check_printed_values(y, e.value);
    sum(mul(y, weights(y.shape()))).backward();
    for (size_t k = 0; k < xs.size(); ++k) {
      INFO("gradient of input " << k);
      REQUIRE(xs[k].grad().defined());
      check_printed_values(xs[k].grad(), e.grads[k]);
    }
  }
}

TEST_CASE("distances and margin losses: f64 gradient checks, first and second order", "[distance][loss][gradcheck]") {
  for (const auto& [name, c] : cases()) {
    INFO(name);
    std::vector<Tensor> xs;
    for (size_t k = 0; k < c.shapes.size(); ++k) xs.push_back(operand(static_cast<int>(k), c.shapes[k]).requires_grad_());
    CHECK(testing::check_gradients(c.fn, xs, 1e-6, 1e-6) == "");
    CHECK(testing::check_second_order(c.fn, xs, 1e-6, 1e-5) == "");
  }
}

TEST_CASE("zero vectors, errors and autocast rows as torch's", "[distance][loss]") {
  // A zero vector's cosine similarity and normalization are 0 (the norms are clamped), as torch's.
  CHECK(cosine_similarity(zeros({2, 3}), ones({2, 3})).to_vector<double>() == std::vector<double>{0, 0});
  CHECK(normalize(zeros({2, 3})).to_vector<double>() == std::vector<double>(6, 0.0));
  CHECK(pairwise_distance(ones({2, 3}), ones({2, 3})).to_vector<double>()[0] == Approx(1.7320508e-6).epsilon(1e-6));
  CHECK_THROWS_WITH(cdist(ones({3}), ones({2, 3})), Catch::Contains("cdist only supports at least 2D tensors, X1 got: 1D"));
  CHECK_THROWS_WITH(cdist(ones({2, 3}), ones({2, 4})), Catch::Contains("X1 and X2 must have the same number of columns"));
  CHECK_THROWS_WITH(multi_margin_loss(ones({2, 3}), from_vector<int64_t>({0, 1}), 3), Catch::Contains("only p == 1 and p == 2 supported"));
  CHECK_THROWS_WITH(triplet_margin_loss(ones({2, 3}), ones({3}), ones({2, 3})),
                    Catch::Contains("expected to have the same number of dimensions"));
  CHECK_THROWS_WITH(multi_margin_loss(ones({2, 3}), from_vector<int64_t>({0, 3})), Catch::Contains("multi_margin_loss"));
  CHECK_THROWS_WITH(multi_margin_loss(ones({3, 4}), from_vector<int64_t>({0, 1, 2}, {3, 1})), Catch::Contains("inconsistent target size"));
  // The unreduced loss has the target's shape; an empty batch gives an empty loss, as torch's.
  CHECK(multi_margin_loss(ones({4}), from_vector<int64_t>({1}), 1, 1.0, Tensor(), Reduction::None).shape() == Shape{1});
  CHECK(multi_margin_loss(ones({1, 4}), scalar_tensor(1, DType::I64), 1, 1.0, Tensor(), Reduction::None).shape() == Shape{});
  CHECK(multi_margin_loss(ones({0, 4}), from_vector<int64_t>({}), 1, 1.0, Tensor(), Reduction::None).shape() == Shape{0});
  CHECK_THROWS_WITH(margin_ranking_loss(ones({2, 4}), ones({4}), ones({4})), Catch::Contains("All input tensors should have same dimension"));
  CHECK_THROWS_WITH(multi_margin_loss(ones({2, 3}), from_vector<int64_t>({0, 1}), 1, 1.0, ones({4})),
                    Catch::Contains("inconsistent weight size, expected 3"));
  CHECK_THROWS_WITH(cdist(ones({2, 3}), from_vector<int64_t>({1, 2, 3}, {1, 3})), Catch::Contains("cdist"));
  // soft_margin_loss and cosine_embedding_loss broadcast, as torch's.
  CHECK(soft_margin_loss(ones({2, 3}), ones({3}), Reduction::None).shape() == Shape{2, 3});
  CHECK(cosine_embedding_loss(ones({3, 4}), ones({1, 4}), ones({3}), 0.0, Reduction::None).shape() == Shape{3});
  CHECK(cosine_similarity(from_vector<int64_t>({1, 2}, {1, 2}), from_vector<double>({1, 2}, {1, 2})).item() == Approx(1.0));
  for (auto op : {"margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
                  "multi_margin_loss", "poisson_nll_loss", "cdist"}) {
    INFO(op);
    CHECK(amp::policy_for(op, DeviceType::CPU) == amp::CastPolicy::FP32);
    CHECK(amp::policy_for(op, DeviceType::CUDA) == amp::CastPolicy::FP32);
  }
  CHECK(amp::policy_for("cosine_similarity", DeviceType::CPU) == amp::CastPolicy::None);
  CHECK(amp::policy_for("cosine_similarity", DeviceType::CUDA) == amp::CastPolicy::FP32);
  const Tensor a = cast(ones({2, 3}), DType::BF16), b = cast(full({2, 3}, 0.5), DType::BF16);
  amp::autocast region(DeviceType::CPU, DType::BF16);
  CHECK(triplet_margin_loss(a, b, a).dtype() == DType::F32);
  CHECK(cdist(a, b).dtype() == DType::F32);
  CHECK(cosine_similarity(a, b).dtype() == DType::BF16);
  CHECK(multilabel_soft_margin_loss(a, b).dtype() == DType::BF16);
}

TEST_CASE("cuda: distances and margin losses agree with the CPU", "[cuda][distance][loss]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  for (const auto& [name, c] : cases()) {
    INFO(name);
    std::vector<Tensor> host, device;
    for (size_t k = 0; k < c.shapes.size(); ++k) {
      host.push_back(operand(static_cast<int>(k), c.shapes[k]));
      device.push_back(host.back().to(kCuda));
    }
    check_close(c.fn(device).to(Device::cpu()), c.fn(host), 1e-12, 1e-14, name);
  }
}

TEST_CASE("the distance and loss modules call their ops with their options and print them", "[distance][loss][nn]") {
  const Tensor a = operand(0, {4, 3}), b = operand(1, {4, 3}), c = operand(2, {4, 3});
  auto same = [](const Tensor& x, const Tensor& y) { return x.to_vector<double>() == y.to_vector<double>(); };
  nn::CosineSimilarity cs(0);
  CHECK(same(cs(a, b), cosine_similarity(a, b, 0)));
  CHECK(cs.describe() == "CosineSimilarity(dim=0, eps=1e-08)");
  CHECK(same(nn::PairwiseDistance(1.0)(a, b), pairwise_distance(a, b, 1.0)));
  CHECK(same(nn::MarginRankingLoss(0.2)(a, b, c), margin_ranking_loss(a, b, c, 0.2)));
  CHECK(same(nn::CosineEmbeddingLoss(0.1, Reduction::Sum)(a, b, pm()), cosine_embedding_loss(a, b, pm(), 0.1, Reduction::Sum)));
  CHECK(same(nn::HingeEmbeddingLoss(0.5)(a, signs()), hinge_embedding_loss(a, signs(), 0.5)));
  CHECK(same(nn::SoftMarginLoss()(a, signs()), soft_margin_loss(a, signs())));
  CHECK(same(nn::MultiLabelSoftMarginLoss()(a, eq(signs(), 1.0).to(DType::F64)), multilabel_soft_margin_loss(a, eq(signs(), 1.0).to(DType::F64))));
  const Tensor t = from_vector<int64_t>({0, 2, 1, 2});
  nn::MultiMarginLoss mm(2, 0.5);
  CHECK(same(mm(a, t), multi_margin_loss(a, t, 2, 0.5)));
  CHECK(mm.describe() == "MultiMarginLoss(p=2, margin=0.5, reduction=mean)");
  CHECK(same(nn::PoissonNLLLoss(true, true)(a, counts()), poisson_nll_loss(a, counts(), true, true)));
  nn::TripletMarginLoss tl(1.5, 2.0, 1e-6, true);
  CHECK(same(tl(a, b, c), triplet_margin_loss(a, b, c, 1.5, 2.0, 1e-6, true)));
  CHECK(tl.describe() == "TripletMarginLoss(margin=1.5, p=2, swap=True, reduction=mean)");
  CHECK(tl.clone_structure()->describe() == tl.describe());
  CHECK_THROWS_WITH(nn::MultiMarginLoss(3), Catch::Contains("only p == 1 and p == 2 supported"));
  // A class weight is a buffer, as torch's: in the state dict, moved with the module.
  nn::MultiMarginLoss weighted(1, 1.0, from_vector<double>({1.0, 2.0, 0.5}));
  CHECK(weighted.state_dict().contains("weight"));
  nn::MultiLabelSoftMarginLoss ml(from_vector<double>({1.0, 2.0, 0.5}));
  CHECK(ml.state_dict().contains("weight"));
  CHECK(nn::MultiLabelSoftMarginLoss().state_dict().contains("weight") == false);
  CHECK(same(nn::functional::normalize(a), normalize(a)));
}
